// What started a run, in three low-cardinality kinds: a metric dimension, a budget's `trigger`, and
// a field of the audit record. Heartbeats and bus events count as schedule: no person asked.
import { EVENT_AUTHOR_ID } from '../policy/access.ts';
import type { Prompt } from '../contracts.ts';

export const TRIGGER_KINDS = ['message', 'schedule', 'trigger'] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];

export function triggerKindOf(prompt: Pick<Prompt, 'author' | 'source' | 'heartbeat'>): TriggerKind {
  if (prompt.author.userId !== EVENT_AUTHOR_ID && !prompt.heartbeat) return 'message';
  // Declared triggers and uploads name their origin; event files and the bus do not.
  return prompt.source?.trigger || prompt.source?.objectKey ? 'trigger' : 'schedule';
}
