// Section 7: context that lasts. (a) What one model step costs as a thread grows: the earlier
// history is written straight into the thread's context.jsonl (N messages = N user prompts + N
// answers), then ONE real prompt goes through the stack and its model step is measured: the S3
// bytes the handlers read and wrote in it (bench/s3-traffic.ts), the size of the request the
// Bedrock fake received, the estimated input tokens of its messages (shared/context/compaction.ts), and
// whether a compaction (a non-streaming `converse` summary call) ran. (b) The cached share of the
// input tokens on steps 2..n of a tool loop, with the fake reporting usage as a caching model would,
// read back from the usage the runtime recorded in context.jsonl.
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { estimateTokens } from '../shared/context/compaction.ts';
import { dataKeys, ROOT_KEYS, runIdFor } from '../shared/ids.ts';
import { loadContext, saveContext, type ContextEntry } from '../shared/context/store.ts';
import type { RecordedRequest, ScriptedTurn } from '../packages/local-cloud/src/bedrock.ts';
import type { LocalExecution } from '../packages/local-cloud/src/step-functions/index.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { runsSummary, waitForQuiet } from './quiet.ts';
import { installS3Recorder, type S3Recorder } from './s3-traffic.ts';

/** Scaled-down compaction settings: compaction triggers within the 1,000-message thread. */
export const SCALED_COMPACTION = { contextWindowTokens: 40_000, keepRecentTokens: 4_000 } as const;
export const CONVERSATION_SIZES = [10, 100, 1_000] as const;
/** Prompts after the first real one in the 1,000-message thread. */
const FOLLOW_UPS = 3;
/** bash `true` calls of the cached tool loop (then an answer). */
export const LOOP_TOOLS = 5;

const USER_TEXT = 'Could you check the deploy log for the billing service and tell me which step failed, and why it failed?';
const ANSWER_TEXT =
  'The migrate step failed: the schema lock was held by an earlier job that never finished. I released the lock and re-ran the step; it passed.';

export interface StepFigures {
  label: string;
  /** Messages (prompt + answer) in the thread before the measured prompt. */
  messages: number;
  compaction: 'off (default window)' | 'scaled';
  compacted: boolean;
  /** Entries in the request's messages. */
  messagesSent: number;
  /** estimateTokens over the request's messages. */
  inputTokens: number;
  /** JSON of the request body the fake recorded (the SDK sends it compact). */
  requestBytes: number;
  s3Gets: number;
  s3BytesIn: number;
  contextBytesIn: number;
  s3Puts: number;
  s3BytesOut: number;
}

export interface CacheStep {
  step: number;
  requestBytes: number;
  /** The fake's estimate of the whole prompt (~4 bytes of request JSON per token). */
  promptTokens: number;
  inputTokens: number;
  cacheReadInputTokens: number;
  cacheWriteInputTokens: number;
}

export interface ContextResult {
  historyTokens: Record<number, number>;
  steps: StepFigures[];
  cache: CacheStep[];
  /** Requests of the tool loop, and those carrying all three cache points. */
  loopRequests: number;
  withAllCachePoints: number;
  cachePointsBy: { system: number; tools: number; lastMessage: number };
}

const bodyBytes = (r: RecordedRequest) => Buffer.byteLength(JSON.stringify(r.body));
const isCachePoint = (b: unknown) => typeof b === 'object' && b !== null && 'cachePoint' in b;

function history(pairs: number, threadId: string): ContextEntry[] {
  const start = Date.now() - pairs * 60_000;
  return Array.from({ length: pairs }, (_, i): ContextEntry[] => {
    const at = new Date(start + i * 60_000).toISOString();
    const runId = `run-history-${i}`;
    return [
      {
        role: 'user',
        content: [{ text: `Fixture User: (${i + 1}) ${USER_TEXT}` }],
        meta: { runId, at, messageId: `${threadId}:history-${i}` },
      },
      { role: 'assistant', content: [{ text: `(${i + 1}) ${ANSWER_TEXT}` }], meta: { runId, at, step: 0 } },
    ];
  }).flat();
}

async function writeSettings(stack: TestStack, settings: object): Promise<void> {
  // The local cloud's own S3 client: not one of the handlers' calls.
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: ROOT_KEYS.settings,
      Body: JSON.stringify(settings),
      ContentType: 'application/json',
    }),
  );
}

interface Posted {
  threadId: string;
  threadTs: string;
  execution: LocalExecution;
  requests: RecordedRequest[];
}

/** Posts (a new thread's mention, or a reply in `threadTs`) and waits for the run and the system to settle. */
async function post(stack: TestStack, text: string, threadTs?: string): Promise<Posted> {
  const firstRequest = stack.bedrock.requests.length;
  const runsBefore = runsSummary(stack).total;
  const posted = await stack.slack.postUserMessage({ text: threadTs ? text : `<@${stack.slack.botUserId}> ${text}`, threadTs });
  if (posted.status !== 200) throw new Error(`Slack delivery failed with HTTP ${posted.status}`);
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const execution = await stack.cloud.stepFunctions.waitForExecution(runIdFor(threadId, posted.ts), 120_000);
  if (execution.status !== 'SUCCEEDED') throw new Error(`Run ${execution.name} ended ${execution.status}: ${execution.error ?? ''}`);
  await waitForQuiet(stack, runsBefore + 1);
  return { threadId, threadTs: posted.threadTs, execution, requests: stack.bedrock.requests.slice(firstRequest) };
}

/**
 * The states of an execution that ran a model step: [entered, the next state entered). The first
 * model step runs in the Prepare state, after prepare (which reads the context the step goes on
 * with); later ones in Model states.
 */
function modelWindows(execution: LocalExecution): [number, number][] {
  const h = execution.history;
  return h.flatMap((s, i) =>
    s.name === 'Prepare' || s.name === 'Model' ? [[s.enteredAt, h[i + 1]?.enteredAt ?? Infinity] as [number, number]] : [],
  );
}

async function measuredPrompt(
  stack: TestStack,
  recorder: S3Recorder,
  base: Omit<StepFigures, keyof Measured>,
  text: string,
  threadTs: string,
): Promise<StepFigures> {
  recorder.start();
  const run = await post(stack, text, threadTs); // on failure, measureContext's finally stops the recorder
  const calls = recorder.stop();
  return { ...base, ...measure(run, calls, dataKeys(run.threadId).context) };
}

type Measured = Pick<
  StepFigures,
  'compacted' | 'messagesSent' | 'inputTokens' | 'requestBytes' | 's3Gets' | 's3BytesIn' | 'contextBytesIn' | 's3Puts' | 's3BytesOut'
>;

function measure(run: Posted, calls: ReturnType<S3Recorder['stop']>, contextKey: string): Measured {
  const windows = modelWindows(run.execution);
  if (windows.length !== 1) throw new Error(`Expected one model step in ${run.execution.name}, found ${windows.length}`);
  const [from, until] = windows[0]!;
  // A step that ends the run finishes it in the same state: its finish (log.jsonl, the audit record)
  // comes after its last context save, and is not the step's.
  const saves = calls.filter((c) => c.operation === 'PutObject' && c.key === contextKey && c.at >= from && c.at < until);
  const to = saves.length ? Math.max(...saves.map((c) => c.at)) + 0.001 : until;
  const inStep = calls.filter((c) => c.at >= from && c.at < to);
  const gets = inStep.filter((c) => c.operation === 'GetObject');
  const puts = inStep.filter((c) => c.operation === 'PutObject');
  const stream = run.requests.filter((r) => r.operation === 'converse-stream');
  if (stream.length !== 1) throw new Error(`Expected one ConverseStream request in ${run.execution.name}, found ${stream.length}`);
  const request = stream[0]!;
  const messages = request.body.messages ?? [];
  return {
    compacted: run.requests.some((r) => r.operation === 'converse'),
    messagesSent: messages.length,
    inputTokens: estimateTokens(messages as unknown as ContextEntry[]),
    requestBytes: bodyBytes(request),
    s3Gets: gets.length,
    s3BytesIn: gets.reduce((sum, c) => sum + c.bytesIn, 0),
    contextBytesIn: gets.filter((c) => c.key === contextKey).reduce((sum, c) => sum + c.bytesIn, 0),
    s3Puts: puts.length,
    s3BytesOut: puts.reduce((sum, c) => sum + c.bytesOut, 0),
  };
}

/** A thread of `pairs` earlier messages, written straight into S3, then one real prompt measured. */
async function growThread(
  stack: TestStack,
  recorder: S3Recorder,
  pairs: number,
  compaction: StepFigures['compaction'],
): Promise<{ figures: StepFigures; threadTs: string; tokens: number }> {
  const opened = await post(stack, `context bench, ${pairs} messages`);
  const entries = history(pairs, opened.threadId);
  const store = { s3: stack.cloud.clients.s3, bucket: stack.cloud.names.bucket };
  await saveContext(store, opened.threadId, entries, (await loadContext(store, opened.threadId)).version);
  const base = { label: `${pairs.toLocaleString('en-US')} messages`, messages: pairs, compaction };
  const figures = await measuredPrompt(stack, recorder, base, 'what was the last thing we fixed?', opened.threadTs);
  return { figures, threadTs: opened.threadTs, tokens: estimateTokens(entries) };
}

/** The fake as a caching model: each step reads the previous request (its prefix) from the cache. */
function cachingModel(stack: TestStack, tools: number): () => void {
  let step = 0;
  let previous = 0;
  stack.bedrock.setDefault((req): ScriptedTurn => {
    if (req.operation === 'converse') return { text: 'summary' };
    const prompt = Math.ceil(bodyBytes(req) / 4);
    const read = step === 0 ? 0 : previous;
    const usage = { inputTokens: prompt - read, cacheReadInputTokens: read, cacheWriteInputTokens: prompt - read, outputTokens: 20 };
    previous = prompt;
    step++;
    if (step <= tools)
      return { toolUses: [{ toolUseId: `tu_cache_${step}_${Date.now()}`, name: 'bash', input: { command: 'true' } }], usage };
    return { text: 'All five checks passed.', usage };
  });
  return () => stack.bedrock.setDefault(() => ({ text: 'Done.' }));
}

async function readContext(stack: TestStack, threadId: string): Promise<ContextEntry[]> {
  const out = await stack.cloud.clients.s3.send(
    new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: dataKeys(threadId).context }),
  );
  return (await out.Body!.transformToString())
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ContextEntry);
}

export async function measureContext(stack: TestStack): Promise<ContextResult> {
  const recorder = installS3Recorder(stack);
  const steps: StepFigures[] = [];
  const historyTokens: Record<number, number> = {};
  try {
    // The 1,000-message thread as it is without compaction: the default window (200,000 tokens) holds it.
    await writeSettings(stack, { sandbox: { startEarly: false } });
    const uncompacted = await growThread(stack, recorder, 1_000, 'off (default window)');
    steps.push({ ...uncompacted.figures, label: `${uncompacted.figures.label}, no compaction` });

    await writeSettings(stack, { sandbox: { startEarly: false }, compaction: SCALED_COMPACTION });
    let last: Awaited<ReturnType<typeof growThread>> | undefined;
    for (const pairs of CONVERSATION_SIZES) {
      last = await growThread(stack, recorder, pairs, 'scaled');
      historyTokens[pairs] = last.tokens;
      steps.push(last.figures);
    }
    for (let i = 1; i <= FOLLOW_UPS && last; i++) {
      const base = { label: `1,000 messages + ${i}`, messages: 1_000 + i, compaction: 'scaled' as const };
      steps.push(await measuredPrompt(stack, recorder, base, `and after that, what next? (${i})`, last.threadTs));
    }
  } finally {
    recorder.stop();
    // The default again (startEarly on, default compaction): the tool loop below needs its sandbox.
    await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: ROOT_KEYS.settings }));
  }

  const restore = cachingModel(stack, LOOP_TOOLS);
  let loop: Posted;
  try {
    loop = await post(stack, `run \`true\` ${LOOP_TOOLS} times with bash, then tell me`);
  } finally {
    restore();
  }
  // Correctness, not timing: every `true` ran in the sandbox and answered the model.
  const results = (loop.requests.at(-1)?.body.messages ?? []).flatMap((m) =>
    (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : [])),
  );
  const succeeded = results.filter((r) => r.status === 'success').length;
  if (succeeded !== LOOP_TOOLS)
    throw new Error(`Expected ${LOOP_TOOLS} successful bash calls in ${loop.execution.name}, found ${succeeded} of ${results.length}`);
  const runId = loop.execution.name;
  const recorded = (await readContext(stack, loop.threadId)).filter(
    (e) => e.role === 'assistant' && e.meta.runId === runId && e.meta.usage,
  );
  const streams = loop.requests.filter((r) => r.operation === 'converse-stream');
  const cache = recorded.map((e, i): CacheStep => {
    const usage = e.meta.usage ?? {};
    const request = streams[i];
    return {
      step: (e.meta.step ?? i) + 1,
      requestBytes: request ? bodyBytes(request) : Number.NaN,
      promptTokens: request ? Math.ceil(bodyBytes(request) / 4) : Number.NaN,
      inputTokens: usage.inputTokens ?? 0,
      cacheReadInputTokens: usage.cacheReadInputTokens ?? 0,
      cacheWriteInputTokens: usage.cacheWriteInputTokens ?? 0,
    };
  });
  const has = {
    system: (r: RecordedRequest) => (r.body.system ?? []).some(isCachePoint),
    tools: (r: RecordedRequest) => isCachePoint(r.body.toolConfig?.tools?.at(-1)),
    lastMessage: (r: RecordedRequest) => isCachePoint(r.body.messages?.at(-1)?.content?.at(-1)),
  };
  return {
    historyTokens,
    steps,
    cache,
    loopRequests: streams.length,
    withAllCachePoints: streams.filter((r) => has.system(r) && has.tools(r) && has.lastMessage(r)).length,
    cachePointsBy: {
      system: streams.filter(has.system).length,
      tools: streams.filter(has.tools).length,
      lastMessage: streams.filter(has.lastMessage).length,
    },
  };
}
