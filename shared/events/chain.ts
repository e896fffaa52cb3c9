// Runs starting runs: an event file written from a sandbox carries, in its S3 object metadata, how
// many events deep the run that wrote it was (sandbox-step sets it; the sandbox cannot). A person's
// or an operator's prompt is depth 0; the run an event file starts is the file's depth. Past
// `maxEventChainDepth` an event file is refused, so an agent cannot keep itself running unattended.
import type { Prompt } from '../schemas.ts';

/** S3 user metadata key (x-amz-meta-event-depth). */
export const EVENT_DEPTH_METADATA = 'event-depth';

/** The depth of an event file written by the run of this prompt. */
export const eventDepthOfWrites = (prompt: Pick<Prompt, 'eventDepth'>): number => (prompt.eventDepth ?? 0) + 1;

/** The depth an event file's metadata records; 0 for files written outside a sandbox. */
export function eventDepthOf(metadata: Record<string, string> | undefined): number {
  const depth = Number(metadata?.[EVENT_DEPTH_METADATA]);
  return Number.isInteger(depth) && depth > 0 ? depth : 0;
}
