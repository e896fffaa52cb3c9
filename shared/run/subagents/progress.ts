// The thread's one status line while subagents work: each child sets its own part (its agent, its step,
// the tool it runs) in the parent's batch item and shows the line as the item has it then.
import type { Thread } from 'chat';
import type { RunInput } from '../../contracts.ts';
import type { JsonLogger } from '../../observability/log.ts';
import type { LedgerDeps } from '../ledger.ts';
import { setProgress, type SubagentBatch } from './batch.ts';

/** Slack shows an assistant status of a line or so; longer parts are cut. */
const MAX_PART_CHARS = 60;
const MAX_LINE_CHARS = 240;

export function statusLine(batch: Pick<SubagentBatch, 'children' | 'progress'>): string {
  const parts = batch.children.map((child, i) => {
    const part = batch.progress?.[child.runId] ?? 'starting…';
    const name = child.agent ?? `subagent ${i + 1}`;
    return `${name}: ${part.length > MAX_PART_CHARS ? `${part.slice(0, MAX_PART_CHARS - 1)}…` : part}`;
  });
  const line = `Subagents: ${parts.join(' · ')}`;
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS - 1)}…` : line;
}

/** Sets this child's progress and shows every child's in the thread's status. Never fails the step. */
export async function showChildProgress(
  deps: { ledger: LedgerDeps; thread(run: RunInput): Thread; logger: JsonLogger },
  run: RunInput,
  progress: string,
): Promise<void> {
  const child = run.child;
  if (!child) return;
  try {
    const batch = await setProgress(deps.ledger, child.parentRunId, child.batch, run.runId, progress);
    if (batch) await deps.thread(run).startTyping(statusLine(batch));
  } catch (error) {
    deps.logger.warn('could not show the subagents’ progress', { runId: run.runId, error });
  }
}
