// Local stand-in for Amazon EventBridge event buses: PutEvents, and the rules the stack defines
// (given from the template: bus, event pattern, targets). It serves PutEvents as production code
// calls it through @aws-sdk/client-eventbridge (AWS JSON 1.1 protocol: POST /,
// X-Amz-Target: AWSEvents.PutEvents), so the same code runs unchanged against
// AWS_ENDPOINT_URL_EVENTBRIDGE=<endpoint>.
//
// Like the service, PutEvents answers once the entries are accepted and delivers afterwards:
// each accepted entry becomes an event { version, id, detail-type, source, account, time, region,
// resources, detail }, every rule on its bus is matched against it, and each matching rule's
// targets get it (or what the target's Input / InputPath makes of it). An entry that cannot be
// accepted (a required field missing, Detail not a JSON object, an aws.* source) fails alone, with
// an ErrorCode in its result entry, as in AWS. drain() waits for deliveries under way.
// Differences: a failed delivery is logged and reported, not retried, and an event bus that no
// rule names still accepts events (which then reach nothing).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LOCAL_ACCOUNT, LOCAL_REGION } from './template.ts';
import { ApiError, isPlainObject, serveAwsJson } from './aws-protocol.ts';
import { listenLocally } from './http-server.ts';

const PROTOCOL = {
  service: 'eventbridge',
  targetPrefix: 'AWSEvents.',
  contentType: 'application/x-amz-json-1.1',
  internalErrorType: 'InternalException',
};

export interface LocalEventBridgeTarget {
  arn: string;
  /** A JSONPath into the event, e.g. '$.detail': the target gets only that part. */
  inputPath?: string;
  /** Constant JSON text: the target gets it instead of the event. */
  input?: string;
  /** Variables from the event placed in a template (see `transformInput`). */
  inputTransformer?: { inputPathsMap?: Record<string, string>; inputTemplate: string };
}

export interface LocalEventBridgeRule {
  /** For logs; default rule-<index>. */
  name?: string;
  /** A bus name or ARN; 'default' for the default bus. */
  eventBusName: string;
  pattern: object;
  targets: LocalEventBridgeTarget[];
}

/** The event as EventBridge builds it from a PutEvents entry. */
export interface LocalBusEvent {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown>;
}

export interface LocalDelivery {
  eventId: string;
  eventBusName: string;
  rule: string;
  targetArn: string;
  /** What the target got: the event, or its Input / InputPath form. */
  payload: unknown;
  ok: boolean;
  error?: string;
}

export interface LocalEventBridgeOptions {
  /** The stand-in's HTTP port on 127.0.0.1. Default: any free port. */
  port?: number;
  rules: LocalEventBridgeRule[];
  /** Invokes a rule target (e.g. the Lambda function behind arn) with its payload. */
  invokeTarget(arn: string, payload: unknown, event: LocalBusEvent): Promise<void>;
  /** The event pattern matcher: pass matchesEventPattern from ./event-pattern.ts. */
  matches(pattern: object, event: object): boolean;
  /** Default LOCAL_REGION / LOCAL_ACCOUNT, as in the other stand-ins. */
  region?: string;
  account?: string;
  /** A delivery failed (the target threw, or its InputPath did not resolve). */
  onError?(error: unknown, delivery: LocalDelivery): void;
}

export interface LocalEventBridge {
  endpoint: string;
  /** Every accepted event, by bus, in order. */
  events: readonly { eventBusName: string; event: LocalBusEvent }[];
  /** Every delivery to a rule target, in order. */
  delivered: readonly LocalDelivery[];
  /** Resolves once every delivery of the events accepted so far has finished. */
  drain(): Promise<void>;
  /**
   * An event an AWS service sends (e.g. S3's "Object Created" for a bucket with EventBridge
   * notifications on): PutEvents refuses aws.* sources, so the services' events come in here.
   */
  sendServiceEvent(event: Pick<LocalBusEvent, 'source' | 'detail-type' | 'detail' | 'resources'>, eventBusName?: string): string;
  close(): Promise<void>;
}

/**
 * Not an AWS API: where local tools send an event as an AWS service would (source aws.*, which
 * PutEvents refuses), e.g. a CloudWatch alarm's state change for a declared trigger.
 * Body: {"source", "detail-type", "detail", "resources"?, "eventBusName"?}; answer: {"id"}.
 */
export const SERVICE_EVENTS_PATH = '/local/service-events';

async function serveServiceEvent(
  request: IncomingMessage,
  response: ServerResponse,
  send: LocalEventBridge['sendServiceEvent'],
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const answer = (status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return answer(400, { message: 'The body must be JSON: {"source", "detail-type", "detail"}' });
  }
  const event = isPlainObject(body) ? body : {};
  if (typeof event.source !== 'string' || typeof event['detail-type'] !== 'string' || !isPlainObject(event.detail)) {
    return answer(400, { message: 'An event needs "source" and "detail-type" (strings) and "detail" (an object)' });
  }
  const resources = Array.isArray(event.resources) ? event.resources.map(String) : [];
  const id = send(
    { source: event.source, 'detail-type': event['detail-type'], detail: event.detail, resources },
    typeof event.eventBusName === 'string' ? event.eventBusName : 'default',
  );
  answer(200, { id });
}

const MAX_ENTRIES = 10;
// PutEvents: the total entry size must be under 256 KB.
const MAX_REQUEST_ENTRY_BYTES = 256 * 1024;

type EntryResult = { EventId: string } | { ErrorCode: string; ErrorMessage: string };

export async function startLocalEventBridge(options: LocalEventBridgeOptions): Promise<LocalEventBridge> {
  const region = options.region ?? LOCAL_REGION;
  const account = options.account ?? LOCAL_ACCOUNT;
  const rules = options.rules.map((rule, index) => ({ ...rule, name: rule.name ?? `rule-${index}`, bus: busName(rule.eventBusName) }));
  const events: { eventBusName: string; event: LocalBusEvent }[] = [];
  const delivered: LocalDelivery[] = [];
  const pending = new Set<Promise<void>>();

  async function deliver(eventBusName: string, event: LocalBusEvent): Promise<void> {
    for (const rule of rules) {
      if (rule.bus !== eventBusName) continue;
      let matched: boolean;
      try {
        matched = options.matches(rule.pattern, event);
      } catch (error) {
        console.error(`[eventbridge] rule ${rule.name}: invalid pattern:`, error);
        continue;
      }
      if (!matched) continue;
      // A rule's targets are independent: each gets the event, whatever the others do.
      await Promise.all(
        rule.targets.map(async (target) => {
          const delivery: LocalDelivery = {
            eventId: event.id,
            eventBusName,
            rule: rule.name,
            targetArn: target.arn,
            payload: undefined,
            ok: false,
          };
          delivered.push(delivery);
          try {
            delivery.payload = targetPayload(target, event, rule.name, ruleArn(rule.name));
            await options.invokeTarget(target.arn, delivery.payload, event);
            delivery.ok = true;
          } catch (error) {
            delivery.error = error instanceof Error ? error.message : String(error);
            if (options.onError) options.onError(error, delivery);
            else console.error(`[eventbridge] ${rule.name} -> ${target.arn} failed:`, error);
          }
        }),
      );
    }
  }

  function putEvents(input: Record<string, unknown>): unknown {
    const entries = input.Entries;
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > MAX_ENTRIES) {
      throw new ApiError(
        'ValidationException',
        `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to ${MAX_ENTRIES} and greater than or equal to 1`,
      );
    }
    const size = entries.reduce<number>((total, entry) => total + entrySize(entry), 0);
    if (size > MAX_REQUEST_ENTRY_BYTES)
      throw new ApiError('ValidationException', 'Total size of the entries in the request is over the limit.');
    const results: EntryResult[] = [];
    const accepted: { eventBusName: string; event: LocalBusEvent }[] = [];
    for (const entry of entries) {
      const built = buildEvent(entry, region, account);
      if ('ErrorCode' in built) {
        results.push(built);
        continue;
      }
      results.push({ EventId: built.event.id });
      accepted.push(built);
    }
    for (const { eventBusName, event } of accepted) accept(eventBusName, event);
    return { FailedEntryCount: results.filter((result) => 'ErrorCode' in result).length, Entries: results };
  }

  const ruleArn = (name: string) => `arn:aws:events:${region}:${account}:rule/${name}`;

  function accept(eventBusName: string, event: LocalBusEvent): void {
    events.push({ eventBusName, event });
    const delivery = deliver(eventBusName, event).finally(() => pending.delete(delivery));
    pending.add(delivery);
  }

  function sendServiceEvent(
    partial: Pick<LocalBusEvent, 'source' | 'detail-type' | 'detail' | 'resources'>,
    eventBusName = 'default',
  ): string {
    const event: LocalBusEvent = {
      version: '0',
      id: randomUUID(),
      account,
      region,
      time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      ...partial,
    };
    accept(eventBusName, event);
    return event.id;
  }

  const operations = { PutEvents: putEvents };
  const server = await listenLocally(
    (request, response) => {
      if (request.method === 'POST' && request.url === SERVICE_EVENTS_PATH) void serveServiceEvent(request, response, sendServiceEvent);
      else void serveAwsJson(PROTOCOL, operations, request, response);
    },
    { port: options.port },
  );

  async function drain(): Promise<void> {
    while (pending.size > 0) await Promise.allSettled([...pending]);
  }

  let closed: Promise<void> | undefined;
  function close(): Promise<void> {
    closed ??= (async () => {
      await server.close();
      await drain();
    })();
    return closed;
  }

  return { endpoint: server.url, events, delivered, drain, sendServiceEvent, close };
}

// ---------------------------------------------------------------------------------------------
// Entries → events
// ---------------------------------------------------------------------------------------------

function buildEvent(
  value: unknown,
  region: string,
  account: string,
): { eventBusName: string; event: LocalBusEvent } | { ErrorCode: string; ErrorMessage: string } {
  const entry = isPlainObject(value) ? value : {};
  for (const field of ['Source', 'DetailType', 'Detail'] as const) {
    if (typeof entry[field] !== 'string' || entry[field] === '') {
      return { ErrorCode: 'InvalidArgument', ErrorMessage: `Parameter ${field} is not valid. Reason: ${field} is a required argument.` };
    }
  }
  const source = entry.Source as string;
  const detailType = entry.DetailType as string;
  if (source.startsWith('aws.')) return { ErrorCode: 'NotAuthorizedForSourceException', ErrorMessage: 'Not authorized for the source.' };
  let detail: unknown;
  try {
    detail = JSON.parse(entry.Detail as string);
  } catch {
    detail = undefined;
  }
  if (!isPlainObject(detail)) return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
  const resources = entry.Resources ?? [];
  if (!Array.isArray(resources) || !resources.every((resource) => typeof resource === 'string')) {
    return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter Resources is not valid. Reason: Resources must be a list of strings.' };
  }
  // awsJson1_1 timestamps are epoch seconds.
  const time = typeof entry.Time === 'number' ? new Date(entry.Time * 1000) : new Date();
  if (Number.isNaN(time.getTime())) return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter Time is not valid.' };
  const eventBusName = busName(typeof entry.EventBusName === 'string' && entry.EventBusName !== '' ? entry.EventBusName : 'default');
  return {
    eventBusName,
    event: {
      version: '0',
      id: randomUUID(),
      'detail-type': detailType,
      source,
      account,
      time: time.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      region,
      resources: resources as string[],
      detail,
    },
  };
}

/** A bus ARN (arn:aws:events:region:account:event-bus/name) or name → its name. */
function busName(nameOrArn: string): string {
  const match = /^arn:[^:]+:events:[^:]*:[^:]*:event-bus\/(.+)$/.exec(nameOrArn);
  return match?.[1] ?? nameOrArn;
}

// EventBridge counts Time (14 bytes if present), Source, DetailType, Detail and Resources in UTF-8.
function entrySize(value: unknown): number {
  if (!isPlainObject(value)) return 0;
  let size = value.Time === undefined ? 0 : 14;
  for (const field of ['Source', 'DetailType', 'Detail']) {
    if (typeof value[field] === 'string') size += Buffer.byteLength(value[field]);
  }
  if (Array.isArray(value.Resources)) for (const resource of value.Resources) size += Buffer.byteLength(String(resource));
  return size;
}

function targetPayload(target: LocalEventBridgeTarget, event: LocalBusEvent, ruleName: string, ruleArn: string): unknown {
  if (target.input !== undefined) return JSON.parse(target.input) as unknown;
  if (target.inputTransformer) return transformInput(target.inputTransformer, event, ruleName, ruleArn);
  if (target.inputPath === undefined) return event;
  const selected = selectPath(event, target.inputPath);
  if (selected === undefined) throw new Error(`InputPath ${target.inputPath} selects nothing in event ${event.id}`);
  return selected;
}

/**
 * An input transformer: each `<name>` in the template (a variable of InputPathsMap, or a reserved
 * aws.events.* one) is replaced by its value. Inside a JSON string the value goes in as text;
 * elsewhere as JSON (`<aws.events.event.json>` is the whole event). A template that is then JSON
 * is delivered parsed, otherwise as the text.
 */
export function transformInput(
  transformer: NonNullable<LocalEventBridgeTarget['inputTransformer']>,
  event: LocalBusEvent,
  ruleName: string,
  ruleArn: string,
): unknown {
  const { detail, ...withoutDetail } = event;
  void detail;
  const values = new Map<string, unknown>([
    ['aws.events.rule-arn', ruleArn],
    ['aws.events.rule-name', ruleName],
    ['aws.events.event.ingestion-time', event.time],
    ['aws.events.event', withoutDetail],
    ['aws.events.event.json', event],
  ]);
  for (const [name, path] of Object.entries(transformer.inputPathsMap ?? {})) values.set(name, selectPath(event, path) ?? null);
  const template = transformer.inputTemplate;
  let out = '';
  let inString = false;
  for (let i = 0; i < template.length; i++) {
    const char = template[i]!;
    if (char === '\\' && inString) {
      out += char + (template[i + 1] ?? '');
      i++;
      continue;
    }
    if (char === '"') inString = !inString;
    if (char === '<') {
      const end = template.indexOf('>', i);
      const name = end > i ? template.slice(i + 1, end) : '';
      if (values.has(name)) {
        const value = values.get(name);
        out += inString ? (typeof value === 'string' ? JSON.stringify(value).slice(1, -1) : JSON.stringify(value)) : JSON.stringify(value);
        i = end;
        continue;
      }
    }
    out += char;
  }
  try {
    return JSON.parse(out) as unknown;
  } catch {
    return out;
  }
}

/** The JSONPath subset InputPath uses: $, .name, ['name'] and [index]. */
function selectPath(root: unknown, path: string): unknown {
  if (!path.startsWith('$')) throw new Error(`Invalid InputPath ${path}: must start with $`);
  const steps = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]/y;
  let value = root;
  let offset = 1;
  while (offset < path.length) {
    steps.lastIndex = offset;
    const match = steps.exec(path);
    if (!match) throw new Error(`Unsupported InputPath ${path}`);
    offset = steps.lastIndex;
    const key = match[1] ?? match[3] ?? match[4];
    if (key !== undefined) value = isPlainObject(value) ? value[key] : undefined;
    else value = Array.isArray(value) ? value[Number(match[2])] : undefined;
    if (value === undefined) return undefined;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------
