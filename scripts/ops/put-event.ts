// `npm run ops -- put-event FILE`: puts one event on the default bus, as the source named in the
// file would, so declared triggers can be tried. The file holds the event as EventBridge shows it:
// {"source": "...", "detail-type": "...", "detail": {...}, "resources": [...]}.
// Against the local stack (default), an aws.* source (a CloudWatch alarm, S3, CodePipeline) is sent
// the way the service would send it; EventBridge itself refuses aws.* sources from PutEvents, so
// against a deployed stack only your own sources can be put (make the real service act instead:
// `aws cloudwatch set-alarm-state` fires an alarm).
import { readFile } from 'node:fs/promises';
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import * as z from 'zod';
import { formatIssues } from '../../shared/support/validation.ts';
import { SERVICE_EVENTS_PATH } from '../../packages/local-cloud/src/eventbridge.ts';

const eventFileSchema = z.object({
  source: z.string().min(1),
  'detail-type': z.string().min(1),
  detail: z.record(z.string(), z.unknown()),
  resources: z.array(z.string()).optional(),
});
export type EventFileContent = z.infer<typeof eventFileSchema>;

export async function readEventFile(path: string): Promise<EventFileContent> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`${path}: cannot read it (${(error as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = eventFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`${path}: not an event: ${formatIssues(parsed.error)}; expected {"source", "detail-type", "detail": {...}}`);
  }
  return parsed.data;
}

export interface PutEventTarget {
  eventBridge: EventBridgeClient;
  /** The local stack's EventBridge (its URL); absent for a deployed stack. */
  localEndpoint?: string;
}

/** Puts the event; returns its id. */
export async function putEvent(target: PutEventTarget, event: EventFileContent): Promise<string> {
  if (event.source.startsWith('aws.')) {
    if (!target.localEndpoint) {
      throw new Error(
        `EventBridge accepts events with source "${event.source}" only from the AWS service itself: make the service act ` +
          '(for a CloudWatch alarm: aws cloudwatch set-alarm-state), or try the trigger against the local stack (npm start)',
      );
    }
    const response = await fetch(new URL(SERVICE_EVENTS_PATH, target.localEndpoint), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    const body = (await response.json()) as { id?: string; message?: string };
    if (!response.ok || !body.id) throw new Error(`The local EventBridge refused the event: ${body.message ?? response.status}`);
    return body.id;
  }
  const out = await target.eventBridge.send(
    new PutEventsCommand({
      Entries: [
        { Source: event.source, DetailType: event['detail-type'], Detail: JSON.stringify(event.detail), Resources: event.resources },
      ],
    }),
  );
  const entry = out.Entries?.[0];
  if (!entry?.EventId)
    throw new Error(`EventBridge refused the event: ${entry?.ErrorCode ?? 'unknown'} ${entry?.ErrorMessage ?? ''}`.trim());
  return entry.EventId;
}
