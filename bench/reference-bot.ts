// The reference bot of section 8: what a plain chat bot does for a mention, in this process, on the
// same fakes as the runtime (the Slack stand-in delivers to it, the Bedrock fake answers it over a
// real socket, its reply goes to the same Slack Web API). No queue, no state machine, no state, no
// sandbox: it checks the request's signature, acks, calls ConverseStream in a loop, runs each bash
// tool call as a child process of its own, and posts the answer with chat.postMessage. The runtime's
// figures are read against it ("added per model step", ratios), as issue 21 sets them.
import { execFile } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import {
  BedrockRuntimeClient,
  ConverseStreamCommand,
  type ContentBlock,
  type Message,
  type ToolConfiguration,
} from '@aws-sdk/client-bedrock-runtime';

const run = promisify(execFile);
const MAX_STEPS = 10;

export interface ReferenceBotOptions {
  signingSecret: string;
  botToken: string;
  /** The Slack Web API base URL (ending in '/'). */
  slackApiUrl: string;
  bedrockEndpoint: string;
  region: string;
  modelId: string;
}

export interface ReferenceBot {
  /** Where Slack should deliver events. */
  url: string;
  /** Replies posted, by the ts of the message they answer. */
  replied: Map<string, number>;
  /** Errors met while answering (a bench run with any is not comparable). */
  errors: unknown[];
  close(): Promise<void>;
}

interface MentionEvent {
  channel: string;
  ts: string;
  thread_ts?: string;
  text: string;
}

const TOOLS: ToolConfiguration = {
  tools: [
    {
      toolSpec: {
        name: 'bash',
        description: 'Run a bash command.',
        inputSchema: { json: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
      },
    },
  ],
};

/** Slack's request signature (v0), checked as any Slack app must. */
function signed(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
  const timestamp = String(headers['x-slack-request-timestamp'] ?? '');
  const signature = String(headers['x-slack-signature'] ?? '');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return signature.length === expected.length && timingSafeEqual(Buffer.from(signature), Buffer.from(expected));
}

/** One model call, its stream read to the end: the assistant message it makes. */
async function converse(bedrock: BedrockRuntimeClient, modelId: string, messages: Message[]): Promise<{ message: Message; stop?: string }> {
  const response = await bedrock.send(
    new ConverseStreamCommand({ modelId, messages, system: [{ text: 'You are a helpful bot.' }], toolConfig: TOOLS }),
  );
  let text = '';
  const tools: { toolUseId: string; name: string; input: string }[] = [];
  let stop: string | undefined;
  for await (const event of response.stream ?? []) {
    const start = event.contentBlockStart?.start?.toolUse;
    if (start) tools.push({ toolUseId: start.toolUseId!, name: start.name!, input: '' });
    const delta = event.contentBlockDelta?.delta;
    if (delta?.text) text += delta.text;
    if (delta?.toolUse?.input) tools.at(-1)!.input += delta.toolUse.input;
    if (event.messageStop) stop = event.messageStop.stopReason;
  }
  const content: ContentBlock[] = [
    ...(text ? [{ text }] : []),
    ...tools.map((t) => ({ toolUse: { toolUseId: t.toolUseId, name: t.name, input: JSON.parse(t.input || '{}') as never } })),
  ];
  return { message: { role: 'assistant', content }, ...(stop ? { stop } : {}) };
}

async function bash(command: string): Promise<{ text: string; status: 'success' | 'error' }> {
  try {
    const { stdout, stderr } = await run('bash', ['-c', command], { timeout: 30_000 });
    return { text: `${stdout}${stderr}`, status: 'success' };
  } catch (error) {
    return { text: String(error), status: 'error' };
  }
}

export async function startReferenceBot(options: ReferenceBotOptions): Promise<ReferenceBot> {
  const bedrock = new BedrockRuntimeClient({
    maxAttempts: 1,
    endpoint: options.bedrockEndpoint,
    region: options.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const replied = new Map<string, number>();
  const errors: unknown[] = [];

  async function answer(event: MentionEvent): Promise<void> {
    const messages: Message[] = [{ role: 'user', content: [{ text: event.text }] }];
    let reply = '';
    for (let step = 0; step < MAX_STEPS; step++) {
      const { message, stop } = await converse(bedrock, options.modelId, messages);
      messages.push(message);
      const uses = (message.content ?? []).flatMap((b) => (b.toolUse ? [b.toolUse] : []));
      if (stop !== 'tool_use' || uses.length === 0) {
        reply = (message.content ?? []).map((b) => b.text ?? '').join('');
        break;
      }
      const results = await Promise.all(
        uses.map(async (use) => {
          const outcome = await bash(String((use.input as { command?: unknown }).command ?? ''));
          return { toolResult: { toolUseId: use.toolUseId, status: outcome.status, content: [{ text: outcome.text }] } };
        }),
      );
      messages.push({ role: 'user', content: results });
    }
    const response = await fetch(`${options.slackApiUrl}chat.postMessage`, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.botToken}`, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ channel: event.channel, thread_ts: event.thread_ts ?? event.ts, text: reply || '(no answer)' }),
    });
    const body = (await response.json()) as { ok: boolean; error?: string };
    if (!body.ok) throw new Error(`chat.postMessage: ${body.error}`);
    replied.set(event.ts, Date.now());
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!signed(options.signingSecret, req.headers, body)) {
        res.writeHead(401).end();
        return;
      }
      const payload = JSON.parse(body) as { type: string; challenge?: string; event?: MentionEvent & { type: string } };
      res.writeHead(200, { 'content-type': 'text/plain' }).end(payload.challenge ?? '');
      // A mention arrives twice (message and app_mention): answer the app_mention.
      if (payload.type === 'event_callback' && payload.event?.type === 'app_mention') {
        answer(payload.event).catch((error: unknown) => errors.push(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/slack/events`,
    replied,
    errors,
    async close() {
      bedrock.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
