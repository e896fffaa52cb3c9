// A context.jsonl line that is not an entry (cut short, a hand edit gone wrong) would fail every run of
// its thread. The run that finds one sets it aside verbatim beside the context, saves the context
// without it, and tells the thread; the next run reads a clean context, so the thread hears it once.
import type { Thread } from 'chat';
import { dataKeys } from '../ids.ts';
import type { JsonLogger } from '../observability/log.ts';
import { type LoadedContext, saveLoadedContext, type StoreDeps, writeText } from './store.ts';

export interface QuarantineDeps {
  store: StoreDeps;
  thread: Thread;
  logger: Pick<JsonLogger, 'warn'>;
}

export function quarantineNotice(lines: number, key: string): string {
  const what = lines === 1 ? 'One line' : `${lines} lines`;
  return `${what} of this thread's saved history could not be read, so I set ${lines === 1 ? 'it' : 'them'} aside and carried on without ${lines === 1 ? 'it' : 'them'}. An operator can find ${lines === 1 ? 'it' : 'them'} in the data bucket at \`${key}\`.`;
}

/** Sets the context's unreadable lines aside (the quarantine file first: nothing is lost if a later write fails). */
export async function quarantineUnreadable(deps: QuarantineDeps, threadId: string, runId: string, context: LoadedContext): Promise<void> {
  const lines = context.unreadable;
  if (!lines?.length) return;
  const key = dataKeys(threadId).contextQuarantine(runId);
  await writeText(deps.store, key, lines.join('\n') + '\n', 'application/x-ndjson');
  await saveLoadedContext(deps.store, threadId, context);
  delete context.unreadable;
  deps.logger.warn('context lines quarantined', { threadId, runId, lines: lines.length, key });
  await deps.thread
    .post(quarantineNotice(lines.length, key))
    .catch((error: unknown) => deps.logger.warn('could not tell the thread about the quarantined lines', { threadId, error }));
}
