// Whose an event file is, from where it lives. A channel's events live under
// `events/{adapter}/{channel}/` (the same encoded segments as the channel's folder in the data tree):
// that is the only events folder a sandbox of that channel syncs, and a file there can only act in
// that channel, whatever its JSON says. Every other file under `events/` is an operator's (written
// with access to the bucket) and may target any thread or channel.
import { dataKeys, parseThreadId } from '../ids.ts';
import { PLATFORM_NAMES } from '../platforms/descriptors.ts';
import { q } from './fields.ts';

export const EVENTS_PREFIX = 'events/';

/**
 * Chat adapters whose folder under `events/` holds channel folders: every platform's. An operator's
 * own subfolders under `events/` must not use these names.
 */
export const CHANNEL_EVENT_ADAPTERS: readonly string[] = PLATFORM_NAMES;

export type EventScope = { kind: 'operator' } | { kind: 'channel'; adapterId: string; channelId: string; prefix: string };

/** The events folder of a thread's channel: `events/{adapter}/{channel}/`. */
export function channelEventsPrefix(threadId: string): string {
  return `${EVENTS_PREFIX}${dataKeys(threadId).channelDir}/`;
}

/** The scope of an event file key, or the reason it cannot be placed there. */
export function eventScopeOf(key: string): EventScope | { kind: 'misplaced'; error: string } {
  const parts = key.slice(EVENTS_PREFIX.length).split('/');
  const [adapterId, channelSegment] = parts;
  if (parts.length < 2 || !adapterId || !CHANNEL_EVENT_ADAPTERS.includes(adapterId)) return { kind: 'operator' };
  if (parts.length < 3 || !channelSegment) {
    return {
      kind: 'misplaced',
      error: `event files under ${EVENTS_PREFIX}${adapterId}/ belong in a channel's folder, like ${EVENTS_PREFIX}${adapterId}/C123ABC/NAME.json`,
    };
  }
  let channelId: string;
  try {
    channelId = decodeURIComponent(channelSegment);
  } catch {
    return { kind: 'misplaced', error: `the folder ${q(channelSegment)} is not an encoded channel id` };
  }
  return { kind: 'channel', adapterId, channelId, prefix: `${EVENTS_PREFIX}${adapterId}/${channelSegment}/` };
}

/** A channel file's target outside its channel, as a sentence; undefined when it stays inside. */
export function targetOutsideChannel(
  scope: Extract<EventScope, { kind: 'channel' }>,
  target: { threadId?: string; adapterId?: string; channelId?: string },
): string | undefined {
  const own = `${scope.adapterId}:${scope.channelId}`;
  const where = target.threadId ? parseThreadId(target.threadId) : { adapter: target.adapterId, channel: target.channelId };
  if (where.adapter === scope.adapterId && where.channel === scope.channelId) return undefined;
  const named = target.threadId
    ? `"threadId" ${q(target.threadId)}`
    : `"adapterId" + "channelId" ${q(`${where.adapter}:${where.channel}`)}`;
  return (
    `${named} is outside this file's channel: a file in ${scope.prefix} acts only in channel ${own} ` +
    `(leave the target out to start a new thread there, or name a thread of ${own})`
  );
}
