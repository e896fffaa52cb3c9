// A protocol-level stand-in for the Bedrock Runtime API (ConverseStream over HTTP/2 eventstream and
// Converse), scriptable turn by turn: the model in tests and benchmarks, and the `LOCAL_MODEL=echo`
// model of the local stack.
/**
 * A protocol-level fake of the Amazon Bedrock Runtime Converse API.
 *
 * It speaks the real wire protocol, so the real `@aws-sdk/client-bedrock-runtime`
 * client can be pointed at it (`endpoint: fake.endpoint`, or
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`). Answers are scripted per call.
 *
 * Routes: POST /model/{modelId}/converse-stream (AWS event stream) and
 * POST /model/{modelId}/converse (JSON). Anything else: 404.
 *
 * Transport: the SDK's default Node handler is NodeHttp2Handler, which speaks
 * HTTP/2 with prior knowledge (h2c) to http:// endpoints. Node's h2c server
 * cannot fall back to HTTP/1.1 (`allowHTTP1` only works with TLS), so a plain
 * TCP front sniffs the connection preface and hands each socket to an HTTP/2
 * or an HTTP/1.1 server that share one request handler.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { InferenceConfiguration, Message, StopReason, SystemContentBlock, ToolConfiguration } from '@aws-sdk/client-bedrock-runtime';
import { EventStreamCodec } from '@smithy/eventstream-codec';

export interface ScriptedToolUse {
  /** Defaults to `tooluse_<n>`. */
  toolUseId?: string;
  name: string;
  /** Any JSON value; streamed as partial JSON strings. */
  input: unknown;
  /** How many contentBlockDelta events the serialized input is split into (default 2). */
  chunks?: number;
}

/** Exception members of the ConverseStreamOutput union (camelCase, as on the wire). */
export type StreamExceptionType =
  'internalServerException' | 'modelStreamErrorException' | 'validationException' | 'throttlingException' | 'serviceUnavailableException';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** What one model call answers. Every field is optional; `{}` answers an empty end_turn. */
export interface ScriptedTurn {
  /** A string is split after whitespace into several deltas; an array gives the deltas exactly. */
  text?: string | string[];
  toolUses?: ScriptedToolUse[];
  /** Default: 'tool_use' when toolUses are present, else 'end_turn'. */
  stopReason?: StopReason;
  /** Missing counts are estimated (~4 chars per token); totalTokens defaults to the sum. */
  usage?: Partial<Usage>;
  /** Delay before every stream event after the first. */
  delayMs?: number;
  /** Delay before the response headers (time to first byte). */
  firstByteDelayMs?: number;
  /**
   * Hold the stream open until this settles, after `holdAfterDeltas` text deltas
   * (default: all of them, i.e. before the text block is stopped). messageStart is
   * always sent first, because the SDK's `send()` only resolves once it has read
   * the first event. On the non-streaming route the whole response waits.
   */
  hold?: PromiseLike<unknown>;
  holdAfterDeltas?: number;
  /** Answer with an HTTP error instead of a response (status defaults by type, else 400). */
  error?: { type: string; status?: number; message?: string };
  /**
   * Send the text deltas, then an in-stream exception event and end the stream
   * (no contentBlockStop / messageStop / metadata). On /converse it becomes an
   * HTTP error of the same type.
   */
  streamError?: { type: StreamExceptionType; message?: string };
  /**
   * Only a request this accepts takes the turn; others pass it by (the next turn that fits, or the
   * default). Runs of other threads on one stack (a periodic event firing, say) then cannot take a
   * turn scripted for one conversation and run its tool calls in their own sandbox.
   */
  takenBy?: (request: RecordedRequest) => boolean;
}

export interface RecordedRequest {
  operation: 'converse' | 'converse-stream';
  /** URL-decoded model id, inference profile id or ARN. */
  modelId: string;
  /** Raw request path, still URL-encoded. */
  path: string;
  /** '2.0' for the SDK's default handler, '1.1' for NodeHttpHandler. */
  httpVersion: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (wire form: blobs are base64 strings). */
  body: {
    messages?: Message[];
    system?: SystemContentBlock[];
    toolConfig?: ToolConfiguration;
    inferenceConfig?: InferenceConfiguration;
    [key: string]: unknown;
  };
  /** Date.now() when the request was received. */
  time: number;
}

export interface BedrockFake {
  /** e.g. http://127.0.0.1:PORT */
  endpoint: string;
  /** Every model call received, in order. */
  requests: RecordedRequest[];
  /** Queue answers; each call consumes one, in order. */
  script(...turns: ScriptedTurn[]): void;
  /** Answer used when the queue is empty (default: echo the last user text). */
  setDefault(fn: (req: RecordedRequest) => ScriptedTurn): void;
  /**
   * Checks each request as Bedrock's IAM would (the local cloud's); a denial is answered with
   * AccessDeniedException and reaches no model.
   */
  setAuthorizer(authorize: ModelAuthorizer | undefined): void;
  close(): Promise<void>;
}

export type ModelAuthorizer = (request: {
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
  body: Buffer;
}) => Promise<{ allowed: boolean; message: string }>;

/** A promise plus its release, for `ScriptedTurn.hold`. */
export function gate(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

const HTTP_STATUS: Record<string, number> = {
  ThrottlingException: 429,
  ValidationException: 400,
  AccessDeniedException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 424,
  ModelStreamErrorException: 424,
  InternalServerException: 500,
  ServiceUnavailableException: 503,
};

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

/** The subset of the HTTP/1 and HTTP/2 compat response APIs used here. */
interface Res {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: Uint8Array): boolean;
  end(body: string): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
}
type Req = http.IncomingMessage | http2.Http2ServerRequest;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));
const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function lastUserText(req: RecordedRequest): string {
  const user = req.body.messages?.filter((m) => m.role === 'user').at(-1);
  return (user?.content ?? []).map((block) => block.text ?? '').join('');
}

function splitInto(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, n)));
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts;
}

function deltasOf(turn: ScriptedTurn): string[] {
  if (Array.isArray(turn.text)) return turn.text;
  // Keep whitespace attached to the preceding word so deltas concatenate back exactly.
  return turn.text ? turn.text.split(/(?<=\s)(?=\S)/) : [];
}

function usageOf(turn: ScriptedTurn, req: RecordedRequest): Usage {
  const tools = (turn.toolUses ?? []).map((t) => t.name + JSON.stringify(t.input));
  const inputTokens = turn.usage?.inputTokens ?? tokens(JSON.stringify(req.body));
  const outputTokens = turn.usage?.outputTokens ?? tokens(deltasOf(turn).join('') + tools.join(''));
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, ...turn.usage };
}

export async function startBedrockFake(options: { port?: number } = {}): Promise<BedrockFake> {
  const queue: ScriptedTurn[] = [];
  const requests: RecordedRequest[] = [];
  let fallback = (req: RecordedRequest): ScriptedTurn => ({ text: lastUserText(req) || 'OK' });
  let toolSeq = 0;
  let requestSeq = 0;
  let authorizer: ModelAuthorizer | undefined;

  function sendError(res: Res, type: string, message: string, status = HTTP_STATUS[type] ?? 400): void {
    // Real Bedrock puts the type in x-amzn-ErrorType and only `message` in the body;
    // `__type` is added too so either lookup path of the SDK finds it.
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      'x-amzn-requestid': `fake-${++requestSeq}`,
    });
    res.end(JSON.stringify({ __type: type, message }));
  }

  async function handle(req: Req, res: Res): Promise<void> {
    const path = req.url ?? '/';
    const route = /^\/model\/([^/?]+)\/(converse|converse-stream)(?:\?.*)?$/.exec(path);
    if (req.method !== 'POST' || !route) {
      return sendError(res, 'UnknownOperationException', `No route for ${req.method} ${path}`, 404);
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    if (authorizer) {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]));
      const decision = await authorizer({ method: req.method ?? 'POST', url: `http://127.0.0.1${path}`, headers, body: bytes });
      if (!decision.allowed) return sendError(res, 'AccessDeniedException', decision.message, 403);
    }
    const raw = bytes.toString('utf8');
    let body: RecordedRequest['body'];
    try {
      body = raw ? (JSON.parse(raw) as RecordedRequest['body']) : {};
    } catch {
      return sendError(res, 'ValidationException', 'Malformed input request');
    }
    const recorded: RecordedRequest = {
      operation: route[2] as RecordedRequest['operation'],
      modelId: decodeURIComponent(route[1] ?? ''),
      path,
      httpVersion: req.httpVersion,
      headers: { ...req.headers },
      body,
      time: Date.now(),
    };
    requests.push(recorded);
    const taken = queue.findIndex((t) => !t.takenBy || t.takenBy(recorded));
    const turn = taken >= 0 ? queue.splice(taken, 1)[0]! : fallback(recorded);
    // toolUseIds default to a per-fake counter, like Bedrock's opaque tooluse_… ids.
    const toolIds = (turn.toolUses ?? []).map((t) => t.toolUseId ?? `tooluse_${++toolSeq}`);

    if (turn.firstByteDelayMs) await sleep(turn.firstByteDelayMs);
    if (turn.error) return sendError(res, turn.error.type, turn.error.message ?? turn.error.type, turn.error.status);
    if (recorded.operation === 'converse') return converse(res, turn, recorded, toolIds);
    return converseStream(res, turn, recorded, toolIds);
  }

  async function converse(res: Res, turn: ScriptedTurn, req: RecordedRequest, toolIds: string[]) {
    await turn.hold;
    if (turn.streamError) {
      const type = capitalize(turn.streamError.type);
      return sendError(res, type, turn.streamError.message ?? type);
    }
    const text = deltasOf(turn).join('');
    const content = [
      ...(text ? [{ text }] : []),
      ...(turn.toolUses ?? []).map((t, i) => ({ toolUse: { toolUseId: toolIds[i], name: t.name, input: t.input } })),
    ];
    res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': `fake-${++requestSeq}` });
    res.end(
      JSON.stringify({
        output: { message: { role: 'assistant', content } },
        stopReason: turn.stopReason ?? (toolIds.length ? 'tool_use' : 'end_turn'),
        usage: usageOf(turn, req),
        metrics: { latencyMs: Date.now() - req.time },
      }),
    );
  }

  async function converseStream(res: Res, turn: ScriptedTurn, req: RecordedRequest, toolIds: string[]) {
    // Build the whole answer as a list of steps first, then play it with delays.
    type Step = { event: string; payload: object } | { exception: StreamExceptionType; payload: object } | { hold: PromiseLike<unknown> };
    const steps: Step[] = [{ event: 'messageStart', payload: { role: 'assistant' } }];
    const deltas = deltasOf(turn);
    const holdAt = turn.hold ? Math.min(turn.holdAfterDeltas ?? deltas.length, deltas.length) : -1;
    let index = 0;
    // Like real Bedrock, a text block has no contentBlockStart: deltas, then a stop.
    deltas.forEach((text, i) => {
      if (i === holdAt && turn.hold) steps.push({ hold: turn.hold });
      steps.push({ event: 'contentBlockDelta', payload: { contentBlockIndex: index, delta: { text } } });
    });
    if (holdAt === deltas.length && turn.hold) steps.push({ hold: turn.hold });
    if (turn.streamError) {
      const { type, message = type } = turn.streamError;
      const payload = type === 'modelStreamErrorException' ? { message, originalStatusCode: 500, originalMessage: message } : { message };
      steps.push({ exception: type, payload });
    } else {
      if (deltas.length) steps.push({ event: 'contentBlockStop', payload: { contentBlockIndex: index++ } });
      (turn.toolUses ?? []).forEach((tool, i) => {
        const contentBlockIndex = index++;
        steps.push({
          event: 'contentBlockStart',
          payload: { contentBlockIndex, start: { toolUse: { toolUseId: toolIds[i], name: tool.name } } },
        });
        for (const input of splitInto(JSON.stringify(tool.input), tool.chunks ?? 2)) {
          steps.push({ event: 'contentBlockDelta', payload: { contentBlockIndex, delta: { toolUse: { input } } } });
        }
        steps.push({ event: 'contentBlockStop', payload: { contentBlockIndex } });
      });
      steps.push({ event: 'messageStop', payload: { stopReason: turn.stopReason ?? (toolIds.length ? 'tool_use' : 'end_turn') } });
      // latencyMs is filled in when the metadata event is actually sent.
      steps.push({ event: 'metadata', payload: { usage: usageOf(turn, req) } });
    }

    let closed = false;
    res.once('close', () => (closed = true));
    res.writeHead(200, {
      'content-type': 'application/vnd.amazon.eventstream',
      'x-amzn-requestid': `fake-${++requestSeq}`,
    });
    for (const [i, step] of steps.entries()) {
      if ('hold' in step) {
        await step.hold;
        continue;
      }
      if (i > 0 && turn.delayMs) await sleep(turn.delayMs);
      if (closed) return; // the client went away (aborted or timed out)
      const isEvent = 'event' in step;
      const payload =
        isEvent && step.event === 'metadata' ? { ...step.payload, metrics: { latencyMs: Date.now() - req.time } } : step.payload;
      const frame = codec.encode({
        headers: {
          ':message-type': { type: 'string', value: isEvent ? 'event' : 'exception' },
          [isEvent ? ':event-type' : ':exception-type']: { type: 'string', value: isEvent ? step.event : step.exception },
          ':content-type': { type: 'string', value: 'application/json' },
        },
        body: Buffer.from(JSON.stringify(payload)),
      });
      if (!res.write(frame)) {
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
    }
    res.end('');
  }

  const onRequest = (req: Req, res: Res) => {
    handle(req, res).catch((err: unknown) => {
      console.error('bedrock fake: handler failed', err);
      try {
        sendError(res, 'InternalServerException', String(err));
      } catch {
        res.end(''); // headers were already sent
      }
    });
  };
  const h2 = http2.createServer(onRequest);
  const h1 = http.createServer(onRequest);

  const sockets = new Set<net.Socket>();
  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // client resets are expected (aborts, teardown)
    // HTTP/2 prior knowledge starts with "PRI * HTTP/2.0"; anything else is HTTP/1.x.
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      if (chunk.subarray(0, 3).toString() === 'PRI') {
        // The HTTP/2 session drains the buffered bytes itself and then takes over the
        // native handle; resuming the JS stream here would race it (GOAWAY code 2).
        h2.emit('connection', socket);
      } else {
        // http.Server reads through 'data' events, which an explicit pause() blocks.
        h1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = front.address() as net.AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    script: (...turns) => void queue.push(...turns),
    setDefault: (fn) => void (fallback = fn),
    setAuthorizer: (authorize) => void (authorizer = authorize),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    },
  };
}
