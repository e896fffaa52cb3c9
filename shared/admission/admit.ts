// Admission: each prompt from the inbox passes these gates in order, over one context computed once
// (shared/admission/context.ts). A gate ends the admission (refused, answered, or admitted to its
// thread) or passes the prompt on; the last one always ends it.
import type { SQSRecord } from 'aws-lambda';
import { promptSchema, type Prompt } from '../contracts.ts';
import { formatIssues } from '../support/validation.ts';
import type { JsonLogger } from '../observability/log.ts';
import { admissionContext, type AdmissionContext, type AdmissionDeps, type Ending, type Gate } from './context.ts';
import { refuseWithoutAccess } from './gates/access.ts';
import { renewPeriodicEvents } from './gates/periodic-events.ts';
import { answerCommands } from './gates/commands.ts';
import { refuseOverBudget } from './gates/budget.ts';
import { refuseTooLarge, storeLongText } from './gates/prompt-size.ts';
import { queueUnlessMayInterrupt, readThread, reclaimStaleLease, steerInSteerMode } from './gates/queue.ts';
import { admitToThread } from './gates/thread.ts';
import { chooseAgent } from './gates/agent.ts';
import { tellAdminsOfSettingsProblems } from './gates/settings-problems.ts';

export const ADMISSION_GATES: readonly Gate[] = [
  tellAdminsOfSettingsProblems,
  refuseWithoutAccess,
  renewPeriodicEvents,
  answerCommands,
  refuseOverBudget,
  storeLongText,
  refuseTooLarge,
  readThread,
  reclaimStaleLease,
  queueUnlessMayInterrupt,
  steerInSteerMode,
  chooseAgent,
  admitToThread,
];

/** Runs `received` through `gates`; how its admission ended. */
export async function admit(received: Prompt, deps: AdmissionDeps, gates: readonly Gate[] = ADMISSION_GATES): Promise<Ending> {
  let ctx = await admissionContext(received, deps);
  const alongside: Promise<unknown>[] = [];
  // The context each gate first ran over, for a gate's `again`.
  const before = new Map<Gate, AdmissionContext>();
  let again = false;
  try {
    for (let i = 0; i < gates.length; i++) {
      const gate = gates[i]!;
      if (!before.has(gate)) before.set(gate, ctx);
      const outcome = await gate(ctx, deps);
      if ('end' in outcome) {
        await Promise.all(alongside);
        return outcome.end;
      }
      if ('again' in outcome) {
        const { from, found } = outcome.again;
        const at = gates.indexOf(from);
        if (again || at < 0 || at > i)
          throw new Error(`Gate ${gate.name} may not run the admission of ${received.messageId} again from ${from.name}`);
        again = true;
        ctx = { ...before.get(from)!, ...found };
        i = at - 1;
        continue;
      }
      if (outcome.alongside) alongside.push(outcome.alongside);
      ctx = { ...ctx, ...outcome.next };
    }
  } finally {
    // Never left running past the admission (the function may be frozen once it returns).
    await Promise.allSettled(alongside);
  }
  throw new Error(`No gate ended the admission of ${received.messageId}: the last gate must admit`);
}

/**
 * The prompt an inbox record carries, or undefined when its body is not one: it can never succeed,
 * and retrying would only hold the thread's queue, so it is kept in the logs and dropped.
 */
export function inboxPrompt(record: SQSRecord, logger: JsonLogger): Prompt | undefined {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    body = undefined;
  }
  const parsed = promptSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  logger.error('inbox message rejected', {
    messageId: record.messageId,
    issues: formatIssues(parsed.error),
    body: record.body.slice(0, 2000),
  });
  return undefined;
}

/** Admits one inbox record; a failure is logged and thrown, so the record (and its thread's later ones) are retried. */
export async function admitRecord(record: SQSRecord, deps: AdmissionDeps): Promise<void> {
  const prompt = inboxPrompt(record, deps.logger);
  if (!prompt) return;
  try {
    await admit(prompt, deps);
  } catch (error) {
    deps.logger.error('admission failed; will retry', { threadId: prompt.threadId, messageId: prompt.messageId, error });
    throw error;
  }
}
