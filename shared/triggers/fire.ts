// A declared trigger fires: an event from EventBridge (any pattern, or an S3 "Object Created") with
// the trigger's runtime part, as the rule's input transformer built it. One firing is at most one
// run: a claim per dedupe key (the filled-in `dedupeKey`, else the event id) turns redeliveries
// and retries of a delivered event into no-ops. Past the trigger's rate limit, firings are counted,
// not run, and one summary run at the end of the window says how many were held back.
import { createHash } from 'node:crypto';
import { DeleteCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { decodeS3EventKey } from '../aws/s3-event-keys.ts';
import type { AttachFiles, Firing } from '../events/fire.ts';
import type { JsonLogger } from '../observability/log.ts';
import { firingClaimKey, TABLE_KEYS, triggerPartition, triggerWindowKey } from '../table.ts';
import { DEFAULT_TRIGGER_OBJECT_MEGABYTES, triggerRuntimeSchema, type TriggerRuntime } from './declaration.ts';
import { copyIntoThread, tooLargeNote, type CopySource, type ObjectCopyDeps } from './objects.ts';
import { fillTemplate } from './template.ts';

const { partitionKey: PK, ttlAttribute: TTL } = TABLE_KEYS;
const RECORD_DAYS = 30;

export const triggerEventSchema = z.looseObject({
  id: z.string().min(1),
  source: z.string(),
  'detail-type': z.string(),
  time: z.string().optional(),
  detail: z.unknown(),
});
/** What a trigger's rule delivers: `{"trigger": <runtime part>, "event": <the whole event>}`. */
export const triggerInputSchema = z.object({ trigger: triggerRuntimeSchema, event: triggerEventSchema });
export type TriggerInput = z.infer<typeof triggerInputSchema>;

/** The summary firing scheduled when a window first goes over its limit. */
export const triggerSummaryInputSchema = z.object({
  triggerSummary: z.object({ trigger: triggerRuntimeSchema, windowStart: z.string() }),
});

export interface TriggerDeps extends ObjectCopyDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  fire(firing: Firing, attach?: AttachFiles): Promise<unknown>;
  /** Sets the one-time summary firing at the end of a rate-limit window. */
  scheduleSummary(name: string, at: Date, input: z.input<typeof triggerSummaryInputSchema>): Promise<void>;
  logger: JsonLogger;
  now(): Date;
  /** The function's timeout: a claim older than this belongs to an attempt that died mid-way. */
  claimTimeoutMs: number;
}

export type TriggerOutcome = 'fired' | 'duplicate' | 'held';

const DEFAULT_TEXT = {
  pattern: 'An AWS event arrived ({detail-type} from {source}). Look into it and report what matters:\n{detail}',
  s3: 'A new file arrived: s3://{detail.bucket.name}/{detail.object.key}. Read it and summarise what it holds.',
};

export const hash = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
const expiresAt = (now: Date) => Math.floor(now.getTime() / 1000) + RECORD_DAYS * 86_400;
const partition = (trigger: TriggerRuntime) => triggerPartition(trigger.name);

export type Claim = 'new' | 'retry' | 'duplicate';
export type ClaimDeps = Pick<TriggerDeps, 'db' | 'tableName' | 'now' | 'claimTimeoutMs'>;

/**
 * The first delivery of a firing claims its key (in the partition of its trigger, or its upload
 * folder); a later one is a duplicate unless the first attempt died unfinished.
 */
export async function claimFiring(deps: ClaimDeps, part: string, key: string): Promise<Claim> {
  const now = deps.now();
  const item = { ...firingClaimKey(part, key), state: 'claimed', claimedAt: now.getTime(), [TTL]: expiresAt(now) };
  try {
    await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: item, ConditionExpression: `attribute_not_exists(${PK})` }));
    return 'new';
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
  try {
    // Taken over only when unfinished and older than an attempt can live.
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: item,
        ConditionExpression: '#state = :claimed AND claimedAt < :stale',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':claimed': 'claimed', ':stale': now.getTime() - deps.claimTimeoutMs },
      }),
    );
    return 'retry';
  } catch (error) {
    if (isConditionalCheckFailed(error)) return 'duplicate';
    throw error;
  }
}

export async function settleFiring(deps: ClaimDeps, part: string, key: string, outcome: 'fired' | 'held'): Promise<void> {
  await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: firingClaimKey(part, key),
      UpdateExpression: 'SET #state = :done, outcome = :outcome',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':done': 'done', ':outcome': outcome },
    }),
  );
}

/** A failed attempt lets the retry claim the key again. */
export async function releaseFiring(deps: ClaimDeps, part: string, key: string): Promise<void> {
  await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: firingClaimKey(part, key) })).catch(() => undefined);
}

function windowOf(trigger: TriggerRuntime, now: Date) {
  const length = trigger.rateLimit!.perMinutes * 60_000;
  const start = Math.floor(now.getTime() / length) * length;
  return { start: new Date(start), end: new Date(start + length) };
}

/** Counts the firing in its window; true when it is over the limit (held back). */
async function overLimit(deps: TriggerDeps, input: TriggerInput, text: string): Promise<boolean> {
  const { trigger } = input;
  if (!trigger.rateLimit) return false;
  const now = deps.now();
  const window = windowOf(trigger, now);
  const out = await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: triggerWindowKey(trigger.name, window.start.toISOString()),
      UpdateExpression: 'ADD firings :one SET lastText = :text, lastEventId = :id, #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': TTL },
      ExpressionAttributeValues: { ':one': 1, ':text': text.slice(0, 2000), ':id': input.event.id, ':ttl': expiresAt(now) },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const count = Number(out.Attributes?.firings ?? 1);
  const limit = trigger.rateLimit.firings;
  if (count <= limit) return false;
  if (count === limit + 1) {
    const name = `tr-${trigger.name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 40)}-${hash(`${trigger.name}#${window.start.toISOString()}`).slice(0, 8)}`;
    await deps.scheduleSummary(name, window.end, { triggerSummary: { trigger, windowStart: window.start.toISOString() } });
  }
  deps.logger.warn('trigger over its rate limit: firing counted, not run', {
    trigger: trigger.name,
    eventId: input.event.id,
    firingsInWindow: count,
    limit,
    windowEnd: window.end.toISOString(),
  });
  return true;
}

/** The object an S3 trigger's event names (EventBridge's "Object Created" detail). */
function objectOf(event: TriggerInput['event']): CopySource | undefined {
  const detail = event.detail as { bucket?: { name?: unknown }; object?: { key?: unknown; size?: unknown } } | undefined;
  const bucket = detail?.bucket?.name;
  const key = detail?.object?.key;
  if (typeof bucket !== 'string' || typeof key !== 'string') return undefined;
  return { bucket, key, size: typeof detail?.object?.size === 'number' ? detail.object.size : undefined };
}

/**
 * An S3 trigger's event with the object's real key: S3 URL-encodes it in the event ('a b+c' arrives
 * as 'a+b%2Bc'), and templates, the dedupe key and the copy all want the key the object has.
 */
function withObjectKeyDecoded(event: TriggerInput['event']): TriggerInput['event'] {
  const detail = event.detail as { object?: { key?: unknown } } | undefined;
  if (!detail?.object || typeof detail.object.key !== 'string') return event;
  return { ...event, detail: { ...detail, object: { ...detail.object, key: decodeS3EventKey(detail.object.key) } } };
}

export async function onTriggerEvent(deps: TriggerDeps, input: TriggerInput): Promise<TriggerOutcome> {
  const { trigger } = input;
  const event = trigger.kind === 's3' ? withObjectKeyDecoded(input.event) : input.event;
  const dedupe = trigger.dedupeKey ? fillTemplate(trigger.dedupeKey, event) : event.id;
  const key = hash(dedupe);
  const log = deps.logger.with({ trigger: trigger.name, eventId: event.id });
  const claimed = await claimFiring(deps, partition(trigger), key);
  if (claimed === 'duplicate') {
    log.info('trigger firing already handled: not run again', { dedupeKey: dedupe });
    return 'duplicate';
  }
  try {
    const text = fillTemplate(trigger.text ?? DEFAULT_TEXT[trigger.kind], event);
    // A retried attempt was counted by the attempt that died.
    if (claimed === 'new' && (await overLimit(deps, input, text))) {
      await settleFiring(deps, partition(trigger), key, 'held');
      return 'held';
    }
    const object = trigger.kind === 's3' ? objectOf(event) : undefined;
    const maxBytes = (trigger.maxObjectMegabytes ?? DEFAULT_TRIGGER_OBJECT_MEGABYTES) * 1024 * 1024;
    const note = object && tooLargeNote(object, maxBytes);
    await deps.fire(
      {
        kind: 'trigger',
        origin: `trigger ${trigger.name}`,
        firingId: `trigger-${trigger.name}-${key}`,
        text: note ? `${text}\n\n${note}` : text,
        source: { trigger: trigger.name, eventId: event.id, ...(object ? { objectKey: `s3://${object.bucket}/${object.key}` } : {}) },
        ...trigger.target,
      },
      object ? (threadId) => copyIntoThread(deps, object, threadId, maxBytes, `trigger ${trigger.name}`) : undefined,
    );
    await settleFiring(deps, partition(trigger), key, 'fired');
    log.info('trigger fired', { dedupeKey: dedupe, ...(object ? { object: `s3://${object.bucket}/${object.key}` } : {}) });
    return 'fired';
  } catch (error) {
    await releaseFiring(deps, partition(trigger), key);
    throw error;
  }
}

/** At the end of a window that went over the limit: one run that says what was held back. */
export async function onTriggerSummary(deps: TriggerDeps, input: z.infer<typeof triggerSummaryInputSchema>): Promise<number> {
  const { trigger, windowStart } = input.triggerSummary;
  const out = await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: triggerWindowKey(trigger.name, windowStart),
      UpdateExpression: 'SET summarised = :true',
      ExpressionAttributeValues: { ':true': true },
      ReturnValues: 'ALL_NEW',
    }),
  );
  const limit = trigger.rateLimit?.firings ?? 0;
  const held = Number(out.Attributes?.firings ?? 0) - limit;
  if (held <= 0) return 0;
  const end = new Date(Date.parse(windowStart) + (trigger.rateLimit?.perMinutes ?? 0) * 60_000);
  const text =
    `Trigger "${trigger.name}" fired ${held} more time${held === 1 ? '' : 's'} between ${windowStart} and ${end.toISOString()}, ` +
    `over its limit of ${limit} per ${trigger.rateLimit?.perMinutes} minutes; those firings did not run. ` +
    `The last one said:\n${String(out.Attributes?.lastText ?? '')}`;
  await deps.fire({
    kind: 'trigger',
    origin: `trigger ${trigger.name}`,
    firingId: `trigger-${trigger.name}-summary-${hash(windowStart)}`,
    text,
    source: { trigger: trigger.name },
    ...trigger.target,
  });
  deps.logger.info('trigger rate-limit summary fired', { trigger: trigger.name, windowStart, held });
  return held;
}
