// How the CLIs find their stack (.local/stack.json, stack-file.ts) and how `npm start` reports a
// taken port (port-holder.ts): real files, real listening sockets, real processes, and the CLIs run
// as an operator runs them. Two "stacks" here are two sets of real servers, each with its own file:
// every CLI reaches the one its file names and never the other, and without a file none guesses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { emfMetrics } from '../../../shared/observability/metrics.ts';
import { createLocalMetrics, startLocalMetricsEndpoint } from '../src/metrics.ts';
import { startSlackStandIn } from '../src/slack/index.ts';
import { portHolder, portsInUse } from '../src/port-holder.ts';
import {
  liveLocalStack,
  LocalStackError,
  openLocalStack,
  removeLocalStack,
  writeLocalStack,
  type LocalStackRecord,
} from '../src/stack-file.ts';

const run = promisify(execFile);
const ROOT = new URL('../../../', import.meta.url).pathname;

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'stack-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0 };
}

const closed = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

function record(pid: number, ports: number[], urls: Partial<LocalStackRecord['urls']> = {}): LocalStackRecord {
  return {
    stackName: 'Threadwork',
    env: { AWS_REGION: 'us-east-1' },
    pid,
    startedAt: new Date().toISOString(),
    ports: ports.map((port) => ({ port, what: 'the Slack stand-in', variable: 'LOCAL_SLACK_PORT' })),
    urls: { api: 'http://127.0.0.1:1', eventBridge: 'http://127.0.0.1:1', metrics: 'http://127.0.0.1:1', ...urls },
  };
}

/** The pid of a process that has exited (and so names nobody, until the kernel reuses it). */
async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/** Runs an npm script's entry point as `npm run` does, with this environment only. */
function cli(script: string, args: string[], env: Record<string, string>) {
  const running = run(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
  running.child.stdin?.end(); // no input: an interactive CLI ends at once
  return running.then(
    (out) => ({ ...out, code: 0 }),
    (error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, code: error.code }),
  );
}

test('a stack file of a live process whose ports answer is the stack; the CLIs read it back', async (t) => {
  const dir = tempDir(t);
  const { server, port } = await listening();
  t.after(() => closed(server));
  const path = join(dir, 'stack.json');
  writeLocalStack(record(process.pid, [port], { slack: `http://127.0.0.1:${port}` }), path);
  const stack = await openLocalStack(path);
  assert.equal(stack.pid, process.pid);
  assert.equal(stack.urls.slack, `http://127.0.0.1:${port}`);
  assert.equal((await liveLocalStack(path))?.pid, process.pid);
});

test('no stack file is an error that says how to start one, not a default port', async (t) => {
  const path = join(tempDir(t), 'stack.json');
  await assert.rejects(openLocalStack(path), (error: Error) => {
    assert.ok(error instanceof LocalStackError);
    assert.match(error.message, /No local stack is running from this checkout \(.*stack\.json does not exist\): start one with npm start/);
    return true;
  });
  assert.equal(await liveLocalStack(path), undefined);
});

test('a stack file whose process is gone is stale, and so is one whose port does not answer', async (t) => {
  const dir = tempDir(t);
  const gone = join(dir, 'gone.json');
  const pid = await exitedPid();
  const { server, port } = await listening();
  writeLocalStack(record(pid, [port]), gone);
  await assert.rejects(
    openLocalStack(gone),
    new RegExp(`gone\\.json is stale: the npm start that wrote it \\(pid ${pid}\\) is no longer running`),
  );
  assert.equal(await liveLocalStack(gone), undefined);

  // The process lives, but the stand-in's port was let go (and could be another stack's next).
  const deaf = join(dir, 'deaf.json');
  await closed(server);
  writeLocalStack(record(process.pid, [port]), deaf);
  await assert.rejects(openLocalStack(deaf), new RegExp(`deaf\\.json is stale: port ${port} \\(the Slack stand-in\\) does not answer`));

  // A file of an older npm start (no pid, no ports) is not guessed at either.
  const old = join(dir, 'old.json');
  writeFileSync(old, JSON.stringify({ stackName: 'Threadwork', env: {} }));
  await assert.rejects(openLocalStack(old), /written by an older npm start/);
});

test('a stack removes only its own file: a later stack that took the name over keeps it', async (t) => {
  const path = join(tempDir(t), 'stack.json');
  writeLocalStack(record(process.pid + 1, []), path);
  removeLocalStack(path, process.pid);
  assert.ok(existsSync(path));
  removeLocalStack(path, process.pid + 1);
  assert.ok(!existsSync(path));
});

test('a taken port is one line naming the variable that moves it and the process that holds it', async (t) => {
  const holder = spawn(process.execPath, [
    '-e',
    "require('net').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
  ]);
  t.after(() => holder.kill());
  const port = Number(await new Promise<string>((resolve) => holder.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()))));
  assert.equal(portHolder(port)?.pid, holder.pid);
  assert.match(portHolder(port)!.command, /createServer/);

  const { server, port: free } = await listening();
  await closed(server);
  const lines = await portsInUse([
    { port, what: 'the Slack stand-in', variable: 'LOCAL_SLACK_PORT' },
    { port: free, what: 'the webhook API', variable: 'PORT' },
    { port: 0, what: 'the metrics summary', variable: 'LOCAL_METRICS_PORT' },
  ]);
  assert.deepEqual(lines.length, 1);
  assert.match(
    lines[0]!,
    new RegExp(
      `^Port ${port} \\(the Slack stand-in\\) is in use by pid ${holder.pid} \\(.*node.*\\): stop that, or move this one with LOCAL_SLACK_PORT=<free port>\\.$`,
    ),
  );
});

test('npm start: a taken port is one line with its variable and holder, and a live stack file of this checkout is not overwritten', async (t) => {
  const dir = tempDir(t);
  const { server, port } = await listening();
  t.after(() => closed(server));
  // Only PORT is fixed (the others take free ports), so other stacks on this machine do not matter.
  const env = {
    LOCAL_STACK_FILE: join(dir, 'stack.json'),
    PORT: String(port),
    LOCAL_SLACK_PORT: '0',
    LOCAL_EVENTBRIDGE_PORT: '0',
    LOCAL_TEAMS_PORT: '0',
    LOCAL_METRICS_PORT: '0',
  };
  const taken = await cli('packages/local-cloud/src/main.ts', [], env);
  assert.equal(taken.code, 2, taken.stderr);
  assert.equal(
    taken.stderr.trim(),
    `Port ${port} (the webhook API) is in use by pid ${process.pid} (${portHolder(port)!.command}): stop that, or move this one with PORT=<free port>.`,
  );
  assert.ok(!existsSync(env.LOCAL_STACK_FILE));

  writeLocalStack(record(process.pid, [port]), env.LOCAL_STACK_FILE);
  const twice = await cli('packages/local-cloud/src/main.ts', [], { ...env, PORT: '0' });
  assert.equal(twice.code, 2);
  assert.match(
    twice.stderr.trim(),
    new RegExp(`^A local stack \\(pid ${process.pid}\\) is already running from this checkout and owns .*stack\\.json: stop it`),
  );
  assert.equal((JSON.parse(readFileSync(env.LOCAL_STACK_FILE, 'utf8')) as LocalStackRecord).pid, process.pid);
});

test('two stacks on one machine: chat and ops reach the stack their file names, never the other, and without a file nothing', async (t) => {
  const dir = tempDir(t);
  // Two stacks' Slack stand-ins and metrics summaries, the second's on other ports.
  const stacks = await Promise.all(
    (['RunDuration', 'ToolCalls'] as const).map(async (name) => {
      const slack = await startSlackStandIn({ signingSecret: name, botToken: `xoxb-${name}` });
      const metrics = createLocalMetrics();
      const published = emfMetrics({ namespace: 'Threadwork', write: (line) => metrics.record('AgentStep', line) });
      published.put(name, 1, { adapter: 'slack', trigger: 'message', tool: 'bash' });
      published.flush();
      const endpoint = await startLocalMetricsEndpoint(metrics);
      t.after(async () => {
        await slack.close();
        await endpoint.close();
      });
      const file = join(dir, `${name}.json`);
      writeLocalStack(
        record(process.pid, [Number(new URL(slack.url).port), endpoint.port], { slack: slack.url, metrics: endpoint.url }),
        file,
      );
      return { name, slack, file };
    }),
  );
  for (const stack of stacks) {
    const other = stacks.find((s) => s !== stack)!;
    // Interactive chat with no input: it greets with the stand-in it found, and ends.
    const chat = await cli('packages/local-cloud/src/chat-cli.ts', [], { LOCAL_STACK_FILE: stack.file });
    assert.equal(chat.code, 0, chat.stderr);
    assert.match(chat.stdout, new RegExp(`watch it at ${stack.slack.url}/`));
    assert.doesNotMatch(chat.stdout, new RegExp(other.slack.url));
    const ops = await cli('scripts/ops/main.ts', ['metrics'], { LOCAL_STACK_FILE: stack.file });
    assert.equal(ops.code, 0, ops.stderr);
    assert.match(ops.stdout, new RegExp(`^${stack.name} `, 'm'));
    assert.doesNotMatch(ops.stdout, new RegExp(other.name));
  }

  const none = { LOCAL_STACK_FILE: join(dir, 'none.json') };
  for (const [script, args] of [
    ['packages/local-cloud/src/chat-cli.ts', ['hello']],
    ['packages/local-cloud/src/chat-cli.ts', ['--teams', 'hello']],
    ['scripts/ops/main.ts', ['metrics']],
    ['scripts/ops/main.ts', ['runs']],
    ['scripts/doctor/main.ts', ['--local']],
  ] as const) {
    const out = await cli(script, [...args], none);
    assert.equal(out.code, 2, `${script} ${args.join(' ')}: ${out.stdout}${out.stderr}`);
    assert.match(out.stderr.trim(), /^No local stack is running from this checkout \(.*none\.json does not exist\)[^\n]*$/);
  }

  // A stale file is refused the same way: its ports may be another stack's by now.
  const stale = join(dir, 'stale.json');
  writeLocalStack(record(await exitedPid(), [Number(new URL(stacks[0]!.slack.url).port)], { slack: stacks[0]!.slack.url }), stale);
  const out = await cli('packages/local-cloud/src/chat-cli.ts', ['hello'], { LOCAL_STACK_FILE: stale });
  assert.equal(out.code, 2);
  assert.match(out.stderr, /^warning: .*stale\.json is stale: the npm start that wrote it \(pid \d+\) is no longer running/);
});

test('.env in the directory npm runs from sets the local variables; the environment wins over it', async (t) => {
  const dir = tempDir(t);
  const { server, port } = await listening();
  t.after(() => closed(server));
  writeFileSync(
    join(dir, '.env'),
    `# a comment\nPORT=${port}\nLOCAL_SLACK_PORT=0\nLOCAL_EVENTBRIDGE_PORT=0\nLOCAL_TEAMS_PORT=0\nLOCAL_METRICS_PORT=0\nLOCAL_STACK_FILE=from-dot-env.json\n`,
  );
  const tsx = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
  const inDir = (script: string, args: string[], env: Record<string, string>) =>
    run(process.execPath, ['--import', tsx, join(ROOT, script), ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env } }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { stderr: string; code: number }) => error,
    );
  const start = await inDir('packages/local-cloud/src/main.ts', [], {});
  assert.equal(start.code, 2);
  assert.match(
    start.stderr.trim(),
    new RegExp(`^Port ${port} \\(the webhook API\\) is in use by pid ${process.pid} .*PORT=<free port>\\.$`),
  );
  const chat = await inDir('packages/local-cloud/src/chat-cli.ts', ['hello'], {});
  assert.match(chat.stderr, /from-dot-env\.json does not exist/);
  const chosen = await inDir('packages/local-cloud/src/chat-cli.ts', ['hello'], { LOCAL_STACK_FILE: 'from-environment.json' });
  assert.match(chosen.stderr, /from-environment\.json does not exist/);
});

test('.env.example lists only variables docs/local.md documents', () => {
  const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
  const readme = readFileSync(join(ROOT, 'docs/local.md'), 'utf8');
  const names = [...example.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
  assert.ok(names.length >= 10, names.join(', '));
  for (const name of names) assert.ok(readme.includes(`| \`${name}\``) || readme.includes(`\`${name}\`, `), name);
});
