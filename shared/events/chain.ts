// Runs starting runs: an event file written from a sandbox carries, in its S3 object metadata, where it
// came from (sandbox-step sets it; the sandbox cannot):
// - how many events deep the run that wrote it was. A person's or an operator's prompt is depth 0;
//   the run an event file starts is the file's depth. Past `maxEventChainDepth` an event file is
//   refused, so an agent cannot keep itself running unattended.
// - who caused it: the person whose prompt started the run that wrote it, carried along the chain
//   (a run an event file started passes on that file's person). Its runs spend that person's budgets,
//   so a spent budget cannot be escaped by having the agent schedule the work. Operators' files, and
//   files written by runs no person started, have nobody.
// - the thread whose run wrote it, where the agent's periodic files say how long they run.
import { parseThreadId } from '../ids.ts';
import { causedBySchema, type Prompt } from '../contracts.ts';
import { triggerKindOf } from '../run/trigger-kind.ts';

/** S3 user metadata keys (x-amz-meta-…). */
export const EVENT_DEPTH_METADATA = 'event-depth';
export const EVENT_CAUSED_BY_METADATA = 'event-caused-by';
export const EVENT_THREAD_METADATA = 'event-thread';

/** Where an event file came from, as its metadata says. */
export interface EventOrigin {
  /** 0 for files written outside a sandbox (operators'). */
  depth: number;
  causedBy?: string;
  /** The thread whose run wrote it. */
  writtenIn?: string;
}

/** The person a run works for: its prompt's author, or for an event's prompt the person its file carries. */
export function causedByOf(threadId: string, prompt: Pick<Prompt, 'author' | 'source' | 'heartbeat' | 'causedBy'>): string | undefined {
  if (triggerKindOf(prompt) === 'message') return `${parseThreadId(threadId).adapter}:${prompt.author.userId}`;
  return prompt.causedBy;
}

/** The metadata of every event file the run of this prompt saves from its sandbox. */
export function eventWriteMetadata(threadId: string, prompt: Prompt): Record<string, string> {
  const causedBy = causedByOf(threadId, prompt);
  // Metadata values travel as HTTP headers: encoded, any id fits.
  return {
    [EVENT_DEPTH_METADATA]: String((prompt.eventDepth ?? 0) + 1),
    [EVENT_THREAD_METADATA]: encodeURIComponent(threadId),
    ...(causedBy ? { [EVENT_CAUSED_BY_METADATA]: encodeURIComponent(causedBy) } : {}),
  };
}

function decoded(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/** What an event file's metadata records; depth 0 and nobody for files written outside a sandbox. */
export function eventOriginOf(metadata: Record<string, string> | undefined): EventOrigin {
  const depth = Number(metadata?.[EVENT_DEPTH_METADATA]);
  if (!Number.isInteger(depth) || depth <= 0) return { depth: 0 };
  const causedBy = causedBySchema.safeParse(decoded(metadata?.[EVENT_CAUSED_BY_METADATA]));
  const writtenIn = decoded(metadata?.[EVENT_THREAD_METADATA]);
  const isThread = (id: string) => {
    try {
      parseThreadId(id);
      return true;
    } catch {
      return false;
    }
  };
  return {
    depth,
    ...(causedBy.success ? { causedBy: causedBy.data } : {}),
    ...(writtenIn && isThread(writtenIn) ? { writtenIn } : {}),
  };
}
