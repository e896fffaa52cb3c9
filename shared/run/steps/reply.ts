// A model step's reply in the thread: streamed as the model writes it, posted at most once per
// (run, step). A retried step finds the record of its earlier post and edits that message instead.
// A heartbeat's answer is held back: posted whole, and only if it is not "nothing to do". Secrets
// are redacted where every message leaves, in the chat's adapters (shared/platforms/redacting-adapter.ts).
import type { Thread } from 'chat';
import { postedMessage, writeRecord, type PostedMessage } from '../ledger.ts';
import type { RunInput } from '../../contracts.ts';
import { createTextPipe } from '../../model/text-pipe.ts';
import { RUN_RECORD } from '../../table.ts';
import type { AgentDeps } from './deps.ts';

/** A heartbeat's answer when nothing needs doing: not posted. */
export const HEARTBEAT_OK = 'HEARTBEAT_OK';

export const CUT_OFF_NOTE = '_(reply cut off at the output limit)_';

export interface ReplyStream {
  /** Text as it streams from the model. */
  onText(delta: string): void;
  /**
   * The stream ended (answered, failed or stopped): what streamed stays in the thread. Returns the id
   * of the message it posted, which the caller records (in the write that ends the step).
   */
  close(): Promise<string | undefined>;
  /** The whole answer is known: edit a retried step's message, or post a heartbeat's answer. */
  settle(text: string, cutOff: boolean): Promise<void>;
}

/** `earlier`: the message an earlier attempt of this step posted (its record), if any. */
export function openReply(
  deps: Pick<AgentDeps, 'ledger' | 'logger'>,
  run: RunInput,
  step: number,
  thread: Thread,
  earlier: PostedMessage | undefined,
): ReplyStream {
  const recordName = RUN_RECORD.reply(step);
  const quiet = run.prompt.heartbeat === true;
  // A subagent's answers are its parent's to read, not the thread's.
  if (run.child) return { onText: () => undefined, close: async () => undefined, settle: async () => undefined };
  const pipe = createTextPipe();
  let posting: Promise<{ id: string }> | undefined;
  const record = (id: string) => writeRecord(deps.ledger, run.runId, recordName, postedMessage({ id }));
  return {
    onText(delta) {
      if (earlier || quiet) return;
      posting ??= thread.post(pipe.iterable);
      pipe.push(delta);
    },
    async close() {
      pipe.end();
      // A partial reply stays visible; the failure handler adds the error message below it.
      const sent = await posting?.catch((error: unknown) => {
        deps.logger.error('streaming the reply failed', { runId: run.runId, error });
        return undefined;
      });
      return sent?.id;
    },
    async settle(text, cutOff) {
      if (earlier) return void (await thread.adapter.editMessage(run.threadId, earlier.messageId, text));
      if (!quiet) {
        if (cutOff) await thread.post(CUT_OFF_NOTE);
        return;
      }
      const said = text.trim();
      if (said === HEARTBEAT_OK) return deps.logger.info('heartbeat: nothing to do', { runId: run.runId });
      if (said) await record((await thread.post(said)).id);
    },
  };
}
