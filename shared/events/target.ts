// Where an event goes: `threadId` (an existing thread, `adapter:channel:thread`) or `adapterId` +
// `channelId` (a new thread in that channel), never both, never neither. One definition for the
// event file, the firing EventBridge Scheduler sends back, and the detail of a custom bus event.
import type * as z from 'zod';
import { parseThreadId } from '../ids.ts';
import { q, stringField } from './fields.ts';

const threadIdSchema = stringField('threadId', '').refine(
  (s) => {
    if (/\s/.test(s)) return false;
    try {
      parseThreadId(s);
      return true;
    } catch {
      return false;
    }
  },
  {
    error: (iss) =>
      `"threadId" ${q(iss.input as string)} is not a thread id: expected adapter:channel:thread, like "slack:C123ABC:1234567890.123456"`,
  },
);

const adapterIdSchema = stringField('adapterId', '').refine((s) => /^[a-z][a-z0-9-]*$/.test(s), {
  error: (iss) => `"adapterId" ${q(iss.input as string)} is not an adapter id: lowercase letters, digits and "-", like "slack"`,
});

const channelIdSchema = stringField('channelId', '').refine((s) => s.length > 0 && !/\s/.test(s), {
  error: (iss) => `"channelId" ${q(iss.input as string)} is not a channel id: a non-empty id without spaces, like "C123ABC"`,
});

/** The target's fields, each optional: which combination is allowed is `checkEventTarget`'s rule. */
export const eventTargetShape = {
  threadId: threadIdSchema.optional(),
  adapterId: adapterIdSchema.optional(),
  channelId: channelIdSchema.optional(),
};

/** The problems with a target, as sentences (empty when it is fine). Reads raw input. */
function targetProblems(value: Record<string, unknown>): string[] {
  const has = (k: string) => value[k] !== undefined;
  if (has('threadId') && (has('adapterId') || has('channelId'))) {
    const extra = ['adapterId', 'channelId']
      .filter(has)
      .map((k) => `"${k}"`)
      .join(' and ');
    return [
      `set either "threadId" (an existing thread) or "adapterId" + "channelId" (a new thread), not both: remove ${extra} or "threadId"`,
    ];
  }
  if (has('threadId')) return [];
  if (has('adapterId') && !has('channelId'))
    return ['"adapterId" needs "channelId": the channel to start the new thread in, like "C123ABC"'];
  if (has('channelId') && !has('adapterId')) return ['"channelId" needs "adapterId": the chat adapter of that channel, like "slack"'];
  if (!has('adapterId')) {
    return ['no target: set "threadId" to post in an existing thread, or "adapterId" and "channelId" to start a new thread in a channel'];
  }
  return [];
}

/** The target rule, as a superRefine of any object schema spread with `eventTargetShape`. */
export function checkEventTarget(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  for (const message of targetProblems(value as Record<string, unknown>)) ctx.addIssue({ code: 'custom', message, path: [] });
}
