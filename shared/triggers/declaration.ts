// Declared triggers: `triggers` in cdk.json (CDK context). Each names an AWS event source (objects
// created in a bucket, or any EventBridge pattern on the default bus) and where its firings go.
// Validated at synth, so a bad declaration fails `cdk synth` naming the trigger and the field; the
// part the function needs at run time travels in each rule's input (see `runtimeOf`).
//
//   { "name": "prod-alarms",
//     "source": { "eventPattern": { "source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"] } },
//     "target": { "adapterId": "slack", "channelId": "C0OPS" },
//     "text": "Alarm {detail.alarmName} is {detail.state.value}: {detail.state.reason}",
//     "dedupeKey": "{detail.alarmName}-{detail.state.timestamp}",
//     "rateLimit": { "firings": 10, "perMinutes": 60 } }
import * as z from 'zod';
import { encodeS3EventKey } from '../aws/s3-event-keys.ts';
import { checkEventTarget, eventTargetShape } from '../events/target.ts';

/** An attachment copied from a bucket is held in memory by the function: the cap is below its size. */
export const MAX_TRIGGER_OBJECT_MEGABYTES = 50;
export const DEFAULT_TRIGGER_OBJECT_MEGABYTES = 20;

const nameSchema = z
  .string({ error: 'is missing: a name of letters, digits, "-" and "_" (it names the rule and appears in prompts and logs)' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$/, { error: 'must be 1-48 letters, digits, "-" or "_", starting with a letter or digit' });

const s3SourceSchema = z.strictObject({
  bucket: z
    .string({ error: 'is missing: the name of the bucket whose new objects fire the trigger' })
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: 'is not a bucket name (3-63 lowercase letters, digits, "." and "-")' }),
  prefix: z.string().max(512).optional(),
  suffix: z.string().max(64).optional(),
});

/** The top-level fields of an event, which a pattern may match on. */
const PATTERN_FIELDS = ['version', 'id', 'detail-type', 'source', 'account', 'time', 'region', 'resources', 'detail'];

const sourceSchema = z
  .strictObject({
    s3: s3SourceSchema.optional(),
    eventPattern: z
      .record(z.string(), z.unknown(), { error: 'must be an EventBridge event pattern (a JSON object)' })
      .refine((p) => Object.keys(p).length > 0, { error: 'is empty: it would match every event on the bus' })
      .refine((p) => Object.keys(p).every((k) => PATTERN_FIELDS.includes(k)), {
        error: (iss) =>
          `matches on ${Object.keys(iss.input as object)
            .filter((k) => !PATTERN_FIELDS.includes(k))
            .map((k) => `"${k}"`)
            .join(', ')}, which events do not have: use ${PATTERN_FIELDS.map((k) => `"${k}"`).join(', ')}`,
      })
      .optional(),
  })
  .refine((s) => (s.s3 === undefined) !== (s.eventPattern === undefined), {
    error: 'needs exactly one of "s3" (objects created in a bucket) or "eventPattern" (events on the default bus)',
  });

const templateField = (what: string) =>
  z
    .string({ error: `must be a string: ${what}` })
    .min(1, { error: `is empty: ${what}` })
    .max(4000, { error: 'is longer than 4000 characters' });

export const triggerSchema = z.strictObject({
  name: nameSchema,
  source: sourceSchema,
  target: z.strictObject(eventTargetShape, { error: 'must be {"threadId"} or {"adapterId", "channelId"}' }).superRefine(checkEventTarget),
  text: templateField('what the agent is told, with {path.in.event} placeholders').optional(),
  dedupeKey: templateField('firings with the same filled-in key run once').optional(),
  rateLimit: z
    .strictObject({
      firings: z.int({ error: 'must be a whole number' }).min(1).max(1000),
      perMinutes: z.int({ error: 'must be a whole number' }).min(1).max(1440),
    })
    .optional(),
  maxObjectMegabytes: z.number().positive().max(MAX_TRIGGER_OBJECT_MEGABYTES).optional(),
});
export type TriggerDeclaration = z.output<typeof triggerSchema>;

/** What the function needs when the trigger fires (everything but the source's pattern). */
export const triggerRuntimeSchema = z.object({
  name: z.string().min(1),
  kind: z.enum(['s3', 'pattern']),
  target: z.object(eventTargetShape).superRefine(checkEventTarget),
  text: z.string().optional(),
  dedupeKey: z.string().optional(),
  rateLimit: z.object({ firings: z.int().min(1), perMinutes: z.int().min(1) }).optional(),
  maxObjectMegabytes: z.number().positive().optional(),
});
export type TriggerRuntime = z.output<typeof triggerRuntimeSchema>;

export function runtimeOf(trigger: TriggerDeclaration): TriggerRuntime {
  const { name, target, text, dedupeKey, rateLimit, maxObjectMegabytes } = trigger;
  return {
    name,
    kind: trigger.source.s3 ? 's3' : 'pattern',
    target,
    ...(text ? { text } : {}),
    ...(dedupeKey ? { dedupeKey } : {}),
    ...(rateLimit ? { rateLimit } : {}),
    ...(maxObjectMegabytes ? { maxObjectMegabytes } : {}),
  };
}

/**
 * The EventBridge pattern of an S3 source: "Object Created" in the bucket, under the prefix, with the
 * suffix. The event carries the key URL-encoded, so the pattern matches the encoded prefix and suffix.
 */
export function s3EventPattern(source: NonNullable<TriggerDeclaration['source']['s3']>): Record<string, unknown> {
  const prefix = source.prefix && encodeS3EventKey(source.prefix);
  const suffix = source.suffix && encodeS3EventKey(source.suffix);
  const key =
    prefix && suffix
      ? [{ wildcard: `${escapeWildcard(prefix)}*${escapeWildcard(suffix)}` }]
      : prefix
        ? [{ prefix }]
        : suffix
          ? [{ suffix }]
          : undefined;
  return {
    source: ['aws.s3'],
    'detail-type': ['Object Created'],
    detail: { bucket: { name: [source.bucket] }, ...(key ? { object: { key } } : {}) },
  };
}

const escapeWildcard = (s: string) => s.replace(/[\\*]/g, (c) => `\\${c}`);

const fieldPath = (path: PropertyKey[]) =>
  path
    .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
    .join('')
    .replace(/^\./, '');

/**
 * The `triggers` context value, validated. Throws one error listing every problem, each naming the
 * trigger and the field: `trigger "prod-alarms" (triggers[0]): "target.channelId" is missing ...`.
 */
export function parseTriggers(raw: unknown): TriggerDeclaration[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw))
    throw new Error('context triggers must be a list of trigger declarations, like [{"name": ..., "source": ..., "target": ...}]');
  const problems: string[] = [];
  const triggers: TriggerDeclaration[] = [];
  const seen = new Set<string>();
  raw.forEach((item, index) => {
    const label = `trigger ${typeof item?.name === 'string' ? JSON.stringify(item.name) : '(no name)'} (triggers[${index}])`;
    const parsed = triggerSchema.safeParse(item);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        if (issue.code === 'unrecognized_keys') {
          problems.push(
            `${label}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${[fieldPath(issue.path), k].filter(Boolean).join('.')}"`).join(', ')}`,
          );
        } else {
          const field = fieldPath(issue.path);
          problems.push(`${label}: ${field ? `"${field}" ` : ''}${issue.message}`);
        }
      }
      return;
    }
    if (seen.has(parsed.data.name.toLowerCase())) problems.push(`${label}: "name" is used by another trigger`);
    seen.add(parsed.data.name.toLowerCase());
    triggers.push(parsed.data);
  });
  if (problems.length) throw new Error(`Invalid triggers in the CDK context:\n  ${problems.join('\n  ')}`);
  return triggers;
}
