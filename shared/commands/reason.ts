// `reason: <why>` (with the colon, so a prompt that begins with the word is still a prompt): the person who just clicked Deny on an approval message says why, as a reply in the
// thread within the window the Deny opened (shared/approvals/decide.ts REASON_WINDOW_MS). The run is
// waiting for it; the model's result for the denied call then carries the reason.
import { SendTaskSuccessCommand } from '@aws-sdk/client-sfn';
import { isTaskGone } from '../aws/errors.ts';
import { MAX_REASON_CHARS } from '../approvals/decide.ts';
import { addReason, pendingReasonOf } from '../approvals/record.ts';
import { defineCommand } from './command.ts';

const NO_DENIAL = 'No denial of yours is waiting for a reason in this thread (a reason is given within a minute of clicking Deny).';

export const reasonCommand = defineCommand({
  name: 'reason',
  parse(text) {
    const reason = /^reason:\s*([\s\S]+)$/i.exec(text)?.[1]?.trim();
    return reason ? { reason: reason.slice(0, MAX_REASON_CHARS) } : undefined;
  },
  runsAt: 'webhook',
  who: 'anyone',
  async answer({ args, who, threadId }, deps) {
    if (!threadId || !who) return { text: NO_DENIAL };
    const { actor, sfn, logger } = deps.control;
    const by = `${who.adapter}:${who.userId}`;
    const id = await pendingReasonOf(actor, threadId, by);
    const record = id ? await addReason(actor, id, by, args.reason, Date.now()) : undefined;
    if (!record) return { text: NO_DENIAL };
    logger.info('approval denial given its reason', { approvalId: record.id, runId: record.runId, by });
    // The run waits for it with this token; without one yet, it finds the reason when it would wait.
    if (record.taskToken) {
      await sfn
        .send(new SendTaskSuccessCommand({ taskToken: record.taskToken, output: JSON.stringify({ decision: record.state }) }))
        .catch((error: unknown) => {
          if (!isTaskGone(error)) throw error;
        });
    }
    return { text: 'Thanks: the agent is told why.' };
  },
});
