// Section 5: tool calls through the thread's sandbox, as the state machine runs them. The scripted
// model asks for one tool per turn and the Bedrock fake answers at once, so a run is the chain
//   Model → NextStep → Tool (agent-step: context, Slack status, the sandbox is up and answering)
//         → NextStep → SandboxTool (sandbox-step: context, sync in from S3, POST /exec, sync out)
//         → NextStep → Model ...
// and one tool call, as the state machine sees it, lasts from Tool entered to the NextStep after
// SandboxTool entered. The same command is then sent without the runtime: POST /exec straight to
// the thread's command server (the local ECS task; token from the sandbox item in DynamoDB), and
// spawned directly, from this process and from a small one (fork's cost grows with the caller).
//
// S3 traffic is read from the local cloud's S3 front door (bench/s3-traffic.ts) and given to the
// SandboxTool state it falls in: calls on the workspace's keys are the sync (what the sandbox step
// logs as bytesIn / bytesOut / s3Calls), the rest is the step's context load and save.
import { spawnSync } from 'node:child_process';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/aws/dynamodb.ts';
import { dataKeys, ROOT_KEYS, runIdFor } from '../shared/ids.ts';
import { exec, type SandboxAddress } from '../shared/sandbox/client.ts';
import type { SandboxItem } from '../shared/sandbox/lifecycle.ts';
import { workspaceLayout, type WorkspaceLayout } from '../shared/sandbox/workspace.ts';
import type { ScriptedTurn } from '../packages/local-cloud/src/bedrock.ts';
import type { LocalExecution } from '../packages/local-cloud/src/step-functions/index.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import type { AwsCallRecorder } from './aws-calls.ts';
import { waitForQuiet, runsSummary } from './quiet.ts';
import { installS3Recorder, type S3Call } from './s3-traffic.ts';
import { summarize, type Summary } from './stats.ts';

/** Tool calls per run, well below the default step cap (maxModelSteps 40). */
const TOOLS_PER_RUN = 30;
export const SMALL_FILES = 100;
/** `true` calls measured with the small files in scratch/. */
const REPEATS_WITH_FILES = 5;
const DIRECT_WARM_UP = 3;
const ONE_MB = 1024 * 1024;

const WRITE_1MB = `yes 'threadwork bench: one line of a text file of exactly one mebibyte' | head -c ${ONE_MB} > big.txt`;
const CREATE_FILES = `mkdir -p small && for i in $(seq 1 ${SMALL_FILES}); do echo "small file $i" > small/f$i.txt; done`;

/** What the bash tool sends for `command` (shared/tools/sandbox-tools.ts): run it in scratch/. */
const asBashTool = (layout: WorkspaceLayout, command: string) =>
  `mkdir -p '${layout.scratchPath}' && cd '${layout.scratchPath}' && {\n${command}\n}`;

interface Planned {
  label: string;
  id: string;
  turn: ScriptedTurn;
}

let seq = 0;
function planned(label: string, name: string, input: Record<string, unknown>): Planned {
  const id = `tu_bench_${++seq}`;
  return { label, id, turn: { toolUses: [{ toolUseId: id, name, input }] } };
}
const bashTrue = (label = 'true') => planned(label, 'bash', { command: 'true' });

/** One tool call, from the execution history. */
export interface ToolCallTiming {
  label: string;
  toolUseId: string;
  threadId: string;
  /** Tool entered (agent-step). */
  start: number;
  /** The NextStep after Tool entered. */
  toolDone: number;
  /** SandboxTool entered (sandbox-step). */
  sandboxAt: number;
  /** The NextStep after SandboxTool entered: the result is saved. */
  end: number;
}

interface ToolRun {
  threadId: string;
  threadTs: string;
  execution: LocalExecution;
  calls: ToolCallTiming[];
}

type StateTimes = Pick<ToolCallTiming, 'start' | 'toolDone' | 'sandboxAt' | 'end'>;

function toolCallsOf(execution: LocalExecution): StateTimes[] {
  const h = execution.history;
  const calls: StateTimes[] = [];
  for (let i = 0; i < h.length; i++) {
    if (h[i]!.name !== 'Tool') continue;
    const path = h.slice(i, i + 4).map((s) => s.name);
    if (path.join(' ') !== 'Tool NextStep SandboxTool NextStep')
      throw new Error(`Unexpected states for a sandbox tool call: ${path.join(' → ')}`);
    calls.push({ start: h[i]!.enteredAt, toolDone: h[i + 1]!.enteredAt, sandboxAt: h[i + 2]!.enteredAt, end: h[i + 3]!.enteredAt });
  }
  return calls;
}

/** The tool results the model was given, by tool use id (as test/e2e/tools.test.ts reads them). */
function toolResults(stack: TestStack, firstRequest: number): Map<string, { status?: string; text: string }> {
  const results = stack.bedrock.requests
    .slice(firstRequest)
    .flatMap((r) => (r.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : []))));
  return new Map(results.map((r) => [r.toolUseId ?? '', { status: r.status, text: (r.content ?? []).map((c) => c.text ?? '').join('') }]));
}

/** Mentions the bot (in a new thread, or in `threadTs`), with the model asking for `tools` one per turn. */
async function runTools(stack: TestStack, tools: Planned[], threadTs?: string): Promise<ToolRun> {
  const firstRequest = stack.bedrock.requests.length;
  stack.bedrock.script(...tools.map((t) => t.turn), { text: 'Done.' });
  const posted = await stack.slack.postUserMessage({ text: `<@${stack.slack.botUserId}> tool bench`, threadTs });
  if (posted.status !== 200) throw new Error(`Slack delivery failed with HTTP ${posted.status}`);
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const execution = await stack.cloud.stepFunctions.waitForExecution(runIdFor(threadId, posted.ts), 120_000);
  if (execution.status !== 'SUCCEEDED') throw new Error(`Run ${execution.name} ended ${execution.status}: ${execution.error ?? ''}`);
  // Correctness, not timing: every tool ran and answered the model.
  const results = toolResults(stack, firstRequest);
  for (const tool of tools) {
    const result = results.get(tool.id);
    if (result?.status !== 'success') throw new Error(`Tool call "${tool.label}" did not succeed: ${result?.text ?? 'no result'}`);
  }
  const timings = toolCallsOf(execution);
  if (timings.length !== tools.length)
    throw new Error(`Expected ${tools.length} sandbox tool calls in ${execution.name}, found ${timings.length}`);
  return {
    threadId,
    threadTs: posted.threadTs,
    execution,
    calls: timings.map((t, i) => ({ label: tools[i]!.label, toolUseId: tools[i]!.id, threadId, ...t })),
  };
}

// ---------------------------------------------------------------------------------------------
// S3 traffic per tool call
// ---------------------------------------------------------------------------------------------

export interface Traffic {
  /** As the sandbox step counts them (sync only). */
  s3Calls: number;
  lists: number;
  gets: number;
  puts: number;
  deletes: number;
  bytesIn: number;
  bytesOut: number;
  /** Bytes of the sync's listing responses (they grow with the keys listed). */
  listBytes: number;
  /** The step's context.jsonl load and save. */
  contextCalls: number;
  contextBytes: number;
}

function trafficOf(calls: S3Call[], call: ToolCallTiming, layout: WorkspaceLayout, contextKey: string): Traffic {
  const synced = (key: string) => layout.memoryKeys.includes(key) || layout.prefixes.some((p) => key.startsWith(p));
  const inStep = (c: S3Call) => c.at >= call.sandboxAt && c.at <= call.end;
  const sync = calls.filter((c) => inStep(c) && synced(c.key));
  // The context is also read by the Model state that follows, possibly within the same millisecond
  // as the step's end: the step's own read comes first, its write last.
  const context = calls.filter((c) => inStep(c) && c.key === contextKey && (c.operation === 'PutObject' || c.at < call.end));
  const count = (op: string) => sync.filter((c) => c.operation === op).length;
  return {
    s3Calls: sync.length,
    lists: count('ListObjectsV2'),
    gets: count('GetObject'),
    puts: count('PutObject'),
    deletes: count('DeleteObject'),
    bytesIn: sync.reduce((s, c) => s + c.bytesIn, 0),
    bytesOut: sync.reduce((s, c) => s + c.bytesOut, 0),
    listBytes: sync.reduce((s, c) => s + c.listBytes, 0),
    contextCalls: context.length,
    contextBytes: context.reduce((s, c) => s + c.bytesIn + c.bytesOut, 0),
  };
}

// ---------------------------------------------------------------------------------------------
// The sandbox step's own figures, when the handlers log (BENCH_LOG_LEVEL=info)
// ---------------------------------------------------------------------------------------------

interface LoggedToolCall {
  toolUseId: string;
  bytesIn: number;
  bytesOut: number;
  s3Calls: number;
}

/** Watches stdout for the sandbox step's `tool call` lines (still writing everything through). */
function watchToolLogs(): () => LoggedToolCall[] {
  const original = process.stdout.write;
  const logged: LoggedToolCall[] = [];
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    if (typeof chunk === 'string' && chunk.includes('"tool call"')) {
      for (const line of chunk.split('\n')) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.message === 'tool call' && entry.component === 'sandbox-step') {
            logged.push({
              toolUseId: String(entry.toolUseId),
              bytesIn: Number(entry.bytesIn),
              bytesOut: Number(entry.bytesOut),
              s3Calls: Number(entry.s3Calls),
            });
          }
        } catch {
          // not a log line
        }
      }
    }
    return (original as (...args: unknown[]) => boolean).apply(process.stdout, [chunk, ...rest]);
  };
  process.stdout.write = write as typeof process.stdout.write;
  return () => {
    process.stdout.write = original;
    return logged;
  };
}

// ---------------------------------------------------------------------------------------------
// Direct paths
// ---------------------------------------------------------------------------------------------

function directSpawn(count: number): number[] {
  const samples: number[] = [];
  for (let i = 0; i < DIRECT_WARM_UP + count; i++) {
    const started = performance.now();
    const out = spawnSync('sh', ['-c', 'true']);
    const ms = performance.now() - started;
    if (out.status !== 0) throw new Error(`sh -c true exited ${String(out.status)}: ${String(out.error ?? '')}`);
    if (i >= DIRECT_WARM_UP) samples.push(ms);
  }
  return samples;
}

/** The same spawns from a fresh, small node process: fork's cost grows with the parent's memory. */
function directSpawnInSmallProcess(count: number): number[] {
  const script =
    "const { spawnSync } = require('node:child_process'); const samples = [];" +
    `for (let i = 0; i < ${DIRECT_WARM_UP + count}; i++) { const t = performance.now(); spawnSync('sh', ['-c', 'true']); samples.push(performance.now() - t); }` +
    `process.stdout.write(JSON.stringify(samples.slice(${DIRECT_WARM_UP})));`;
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`The spawn helper failed: ${out.stderr || String(out.error ?? '')}`);
  return JSON.parse(out.stdout) as number[];
}

async function directExec(address: SandboxAddress, command: string, count: number): Promise<{ roundTrip: number[]; server: number[] }> {
  const roundTrip: number[] = [];
  const server: number[] = [];
  for (let i = 0; i < DIRECT_WARM_UP + count; i++) {
    const started = performance.now();
    const result = await exec(address, { id: `bench-exec-${++seq}`, command, timeoutMs: 30_000 });
    const ms = performance.now() - started;
    if (result.exitCode !== 0) throw new Error(`POST /exec exited ${String(result.exitCode)}: ${result.stderr}`);
    if (i < DIRECT_WARM_UP) continue;
    roundTrip.push(ms);
    server.push(result.durationMs);
  }
  return { roundTrip, server };
}

/** The thread's running command server: its task's address, and the token from the sandbox item. */
async function sandboxAddress(stack: TestStack, threadId: string): Promise<SandboxAddress> {
  // The local cloud's own DynamoDB client: not one of the handlers' calls.
  const db = documentClient(stack.cloud.clients.dynamodb);
  const out = await db.send(
    new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: 'sandboxes', sk: threadId }, ConsistentRead: true }),
  );
  const item = out.Item as SandboxItem | undefined;
  const task = item ? stack.cloud.ecs.tasks.get(item.taskArn) : undefined;
  if (!item || item.status !== 'running' || task?.status !== 'RUNNING') {
    throw new Error(`No running sandbox for ${threadId} (item ${item?.status ?? 'missing'}, task ${task?.status ?? 'missing'})`);
  }
  return { baseUrl: `http://${task.ip}:${task.port}`, token: item.token };
}

/**
 * settings.json `sandbox.startEarly`: with it (the default) every run starts its thread's sandbox in
 * Prepare. Sections 1 and 2 start hundreds of runs in new threads, which would be as many command
 * server processes on this machine, competing with the measurements (and filling its memory); in
 * AWS the tasks run on Fargate, away from the functions. Those sections run with it off.
 */
export async function setEarlySandboxStart(stack: TestStack, enabled: boolean): Promise<void> {
  // The local cloud's own S3 client: not one of the handlers' calls.
  const { s3 } = stack.cloud.clients;
  const key = { Bucket: stack.cloud.names.bucket, Key: ROOT_KEYS.settings };
  // The benchmarks measure the machinery with hundreds of threads in one channel at once, not the
  // limits a team sets on runs across threads (settings.json `limits`).
  const settings = {
    limits: { maxConcurrentRunsPerChannel: 1000, maxConcurrentRuns: 10_000 },
    ...(enabled ? {} : { sandbox: { startEarly: false } }),
  };
  await s3.send(new PutObjectCommand({ ...key, Body: JSON.stringify(settings), ContentType: 'application/json' }));
}

// ---------------------------------------------------------------------------------------------
// The measurement
// ---------------------------------------------------------------------------------------------

export interface Scenario {
  files: string;
  label: string;
  traffic: Traffic[];
  sandboxState: Summary;
}

export interface ToolsResult {
  /** Steady-state `true` calls (the first call of the thread excluded). */
  n: number;
  runs: number;
  wholePath: Summary;
  toolState: Summary;
  choice: Summary;
  sandboxState: Summary;
  /** POST /exec with the bash tool's command (mkdir -p scratch && cd scratch && true). */
  execTool: Summary;
  execTrue: Summary;
  /** The command server's own durationMs (spawn → exit, whole ms) for the tool's command. */
  execServer: Summary;
  spawn: Summary;
  spawnSmall: Summary;
  /** Resident memory of the bench process when it spawned. */
  benchRss: number;
  /** The first tool call of each thread: the sandbox task starts (RunTask was sent in Prepare). */
  firstCalls: { whole: number; toolState: number; sincePrepare: number }[];
  /** Median over the steady calls, by `service operation`. */
  awsPerCall: [string, number][];
  slackPerCall: [string, number][];
  contextPerCall: { calls: number; bytes: number };
  scenarios: Scenario[];
  /** S3-layer figures vs the sandbox step's own log lines, when the handlers log. */
  logCheck?: { compared: number; mismatches: string[] };
  elapsedMs: number;
}

const median = (values: number[]) => summarize(values).p50;

function perCallMedians<T extends { at: number }>(items: T[], calls: ToolCallTiming[], key: (item: T) => string): [string, number][] {
  const counts = calls.map((call) => {
    const row = new Map<string, number>();
    for (const item of items) if (item.at >= call.start && item.at < call.end) row.set(key(item), (row.get(key(item)) ?? 0) + 1);
    return row;
  });
  const keys = [...new Set(counts.flatMap((row) => [...row.keys()]))].sort();
  return keys.map((k) => [k, median(counts.map((row) => row.get(k) ?? 0))] as [string, number]).filter(([, n]) => n > 0);
}

export async function measureTools(stack: TestStack, counter: AwsCallRecorder, count: number): Promise<ToolsResult> {
  const started = performance.now();
  const recorder = installS3Recorder(stack);
  const logged = watchToolLogs();
  const runsBefore = runsSummary(stack).total;
  const slackBefore = stack.slack.calls.length;
  const runs: ToolRun[] = [];
  let s3: S3Call[];
  let aws: ReturnType<AwsCallRecorder['stop']>;
  let loggedCalls: LoggedToolCall[];
  recorder.start();
  counter.start();
  try {
    // Thread A: 1 + count `true` calls (TOOLS_PER_RUN per run), then a 1 MB file written and read.
    const trues = [bashTrue('first'), ...Array.from({ length: count }, () => bashTrue())];
    for (let i = 0; i < trues.length; i += TOOLS_PER_RUN)
      runs.push(await runTools(stack, trues.slice(i, i + TOOLS_PER_RUN), runs[0]?.threadTs));
    const threadTs = runs[0]!.threadTs;
    runs.push(
      await runTools(
        stack,
        [planned('write 1 MB', 'bash', { command: WRITE_1MB }), planned('read 1 MB', 'read', { path: 'big.txt', limit: 20 })],
        threadTs,
      ),
    );
    // Thread B: the same with SMALL_FILES small files in scratch/.
    runs.push(
      await runTools(stack, [
        bashTrue('first'),
        planned('create files', 'bash', { command: CREATE_FILES }),
        ...Array.from({ length: REPEATS_WITH_FILES }, () => bashTrue('true with files')),
        planned('write 1 MB with files', 'bash', { command: WRITE_1MB }),
        planned('read 1 MB with files', 'read', { path: 'big.txt', limit: 20 }),
      ]),
    );
    await waitForQuiet(stack, runsBefore + runs.length);
  } finally {
    s3 = recorder.stop();
    aws = counter.stop();
    loggedCalls = logged();
  }
  const threadA = runs[0]!.threadId;
  const layoutA = workspaceLayout(threadA);
  const address = await sandboxAddress(stack, threadA);
  const exec1 = await directExec(address, asBashTool(layoutA, 'true'), count);
  const exec2 = await directExec(address, 'true', count);
  const benchRss = process.memoryUsage().rss;
  const spawn = directSpawn(count);
  const spawnSmall = directSpawnInSmallProcess(count);

  const calls = runs.flatMap((run) => run.calls);
  const steady = calls.filter((c) => c.threadId === threadA && c.label === 'true');
  const traffic = new Map(calls.map((c) => [c, trafficOf(s3, c, workspaceLayout(c.threadId), dataKeys(c.threadId).context)]));
  const scenario = (files: string, label: string, picked: ToolCallTiming[]): Scenario => ({
    files,
    label,
    traffic: picked.map((c) => traffic.get(c)!),
    sandboxState: summarize(picked.map((c) => c.end - c.sandboxAt)),
  });
  const labelled = (label: string) => calls.filter((c) => c.label === label);
  const scenarios = [
    scenario('0', 'bash `true`', steady),
    scenario('0 → 1', 'bash: write a 1 MB file', labelled('write 1 MB')),
    scenario('1', 'read: the 1 MB file (20 lines shown)', labelled('read 1 MB')),
    scenario(`0 → ${SMALL_FILES}`, `bash: create ${SMALL_FILES} small files`, labelled('create files')),
    scenario(String(SMALL_FILES), 'bash `true`', labelled('true with files')),
    scenario(`${SMALL_FILES} → ${SMALL_FILES + 1}`, 'bash: write a 1 MB file', labelled('write 1 MB with files')),
    scenario(String(SMALL_FILES + 1), 'read: the 1 MB file (20 lines shown)', labelled('read 1 MB with files')),
  ];

  let logCheck: ToolsResult['logCheck'];
  if (loggedCalls.length > 0) {
    const byId = new Map(loggedCalls.map((l) => [l.toolUseId, l]));
    const compared = calls.filter((c) => byId.has(c.toolUseId));
    const mismatches = compared.flatMap((c) => {
      const [t, log] = [traffic.get(c)!, byId.get(c.toolUseId)!];
      return t.bytesIn === log.bytesIn && t.bytesOut === log.bytesOut && t.s3Calls === log.s3Calls
        ? []
        : [
            `${c.label}: counted ${t.s3Calls} calls ${t.bytesIn}/${t.bytesOut} B, logged ${log.s3Calls} calls ${log.bytesIn}/${log.bytesOut} B`,
          ];
    });
    logCheck = { compared: compared.length, mismatches };
  }

  const firstCalls = runs
    .filter((run) => run.calls[0]?.label === 'first')
    .map((run) => {
      const first = run.calls[0]!;
      const prepare = run.execution.history.find((h) => h.name === 'Prepare')?.enteredAt ?? Number.NaN;
      return { whole: first.end - first.start, toolState: first.toolDone - first.start, sincePrepare: first.end - prepare };
    });
  const contexts = steady.map((c) => traffic.get(c)!);
  return {
    n: steady.length,
    runs: runs.length,
    wholePath: summarize(steady.map((c) => c.end - c.start)),
    toolState: summarize(steady.map((c) => c.toolDone - c.start)),
    choice: summarize(steady.map((c) => c.sandboxAt - c.toolDone)),
    sandboxState: summarize(steady.map((c) => c.end - c.sandboxAt)),
    execTool: summarize(exec1.roundTrip),
    execTrue: summarize(exec2.roundTrip),
    execServer: summarize(exec1.server),
    spawn: summarize(spawn),
    spawnSmall: summarize(spawnSmall),
    benchRss,
    firstCalls,
    awsPerCall: perCallMedians(
      aws.filter((c) => c.source === 'handlers'),
      steady,
      (c) => `${c.service} ${c.operation}`,
    ),
    slackPerCall: perCallMedians(stack.slack.calls.slice(slackBefore), steady, (c) => c.method),
    contextPerCall: { calls: median(contexts.map((t) => t.contextCalls)), bytes: median(contexts.map((t) => t.contextBytes)) },
    scenarios,
    logCheck,
    elapsedMs: performance.now() - started,
  };
}
