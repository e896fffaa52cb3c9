// Slack Events API requests for the ack bench: the recorded mention payload (Chat SDK replay
// fixture), made unique per request (event id, message ts: a new thread each time) and signed with
// the stand-in's secret, either as an HTTP request or as the API Gateway event the webhook receives.
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { signSlackRequest } from '../packages/local-cloud/src/slack/index.ts';

const FIXTURE = new URL('../test/fixtures/chat-sdk-replay/slack.json', import.meta.url);

interface MentionFixture {
  botUserId: string;
  mention: { event: Record<string, unknown>; [key: string]: unknown };
}

/** The recorded mention (test/fixtures/chat-sdk-replay). */
export function loadMention(): MentionFixture {
  return JSON.parse(readFileSync(FIXTURE, 'utf8')) as MentionFixture;
}

let lastMicros = 0;
/** Slack message timestamps, strictly increasing, so every request starts its own thread. */
function nextTs(): string {
  lastMicros = Math.max(Date.now() * 1000, lastMicros + 1);
  return `${Math.floor(lastMicros / 1e6)}.${String(lastMicros % 1e6).padStart(6, '0')}`;
}

export interface SignedEvent {
  body: string;
  headers: Record<string, string>;
  /** The Chat SDK thread and message this mention becomes (its run id derives from them). */
  threadId: string;
  messageId: string;
}

/** A fresh copy of the recorded mention: new message ts (a new thread) and a new event id. */
export function signedMention(fixture: MentionFixture, signingSecret: string): SignedEvent {
  const ts = nextTs();
  const payload = {
    ...fixture.mention,
    event: { ...fixture.mention.event, ts, event_ts: ts },
    event_id: `Ev${randomUUID().replace(/-/g, '').slice(0, 12).toUpperCase()}`,
    event_time: Math.floor(Date.now() / 1000),
  };
  const body = JSON.stringify(payload);
  return {
    body,
    threadId: `slack:${String(fixture.mention.event.channel)}:${ts}`,
    messageId: ts,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
      ...lowerCaseKeys(signSlackRequest(body, signingSecret)),
    },
  };
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

/** The payload-format-2.0 event API Gateway would hand the webhook for this request. */
export function apiGatewayEvent(event: SignedEvent, host = 'bench.local'): APIGatewayProxyEventV2 {
  const now = new Date();
  const path = '/slack/events';
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { ...event.headers, host, 'content-length': String(Buffer.byteLength(event.body)) },
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: host,
      domainPrefix: 'bench',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: event.headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey: `POST ${path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: event.body,
    isBase64Encoded: false,
  };
}
