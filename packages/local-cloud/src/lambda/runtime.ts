// The local Lambda service: each function version runs in a worker thread of its own, started on
// its first invocation (a cold start), with the environment, credentials and network of that
// function. Invocations are JSON in and JSON out, held to Lambda's payload limits. Publishing a new
// set of versions (a redeploy) leaves the versions a run already uses in place, as Lambda does.
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { handlerBundle, workerBundle } from './bundles.ts';
import { ASYNC_PAYLOAD_LIMIT, LambdaLimitExceeded, SYNC_REQUEST_LIMIT, SYNC_RESPONSE_LIMIT } from './limits.ts';
import type { WorkerNetwork } from './network-policy.ts';
import type { WorkerReady, WorkerReply, WorkerRequest, WorkerSetup } from './worker.ts';

export interface LocalFunctionVersion {
  /** The function's logical id in the template (its local name). */
  functionId: string;
  /** The handler module, relative to the repository root. */
  entry: string;
  env: Record<string, string>;
  /** The function's own environment variables, as Lambda's GetFunctionConfiguration lists them. */
  variables: Record<string, string>;
  network: WorkerNetwork;
}

export type InvocationKind = 'sync' | 'async';

export interface Invocation {
  functionId: string;
  version: number;
  at: number;
  /** When it returned or failed (epoch ms, as `at`): the bench reads each function's own time from these two. */
  endedAt?: number;
  /** The error's name, when the invocation failed (what Lambda counts in its Errors metric). */
  error?: string;
  /**
   * On the invocation that cold-started the function: loading its handler module, top-level code
   * included (Lambda's REPORT "Init Duration"), in ms. Locally the module is the test bundle
   * (packages outside it), so compare functions with each other, not with AWS.
   */
  initMs?: number;
}

export interface LocalLambda {
  /** Publishes a version of each function; unqualified invocations go to the newest. Returns the numbers. */
  publish(functions: LocalFunctionVersion[]): Record<string, number>;
  /** Removes a version (a deploy that did not retain it, or DeleteFunction of it): invoking it then fails as on AWS. */
  remove(functionId: string, version: number): Promise<void>;
  /** A function's published versions, oldest first, with when each was published (epoch ms); none for an unknown function. */
  versions(functionId: string): { version: number; publishedAt: number }[];
  invoke(functionId: string, event: unknown, options?: { version?: number; kind?: InvocationKind }): Promise<unknown>;
  /** Every invocation so far, in order. */
  readonly invocations: readonly Invocation[];
  /** The newest published version of a function, or undefined when it has none. */
  configuration(functionId: string): LocalFunctionVersion | undefined;
  close(): Promise<void>;
}

class FunctionWorker {
  readonly spec: LocalFunctionVersion;
  private worker: Worker | undefined;
  private ready: Promise<number> | undefined;
  private nextId = 0;
  /** Counts stops: a start that finds it changed once its bundles are made was stopped meanwhile. */
  private stops = 0;
  private readonly pending = new Map<number, { resolve(result: string): void; reject(error: Error): void }>();

  constructor(
    private readonly root: string,
    spec: LocalFunctionVersion,
    private readonly onOutput: OutputListener | undefined,
  ) {
    this.spec = spec;
  }

  /** Starts the worker; resolves with its init time once the handler module is loaded. */
  private async start(): Promise<number> {
    const stops = this.stops;
    const [script, entry] = await Promise.all([workerBundle(this.root), handlerBundle(this.root, this.spec.entry)]);
    if (stops !== this.stops) throw new Error(`the ${this.spec.functionId} worker was stopped while it started`);
    const setup: WorkerSetup = { entry: pathToFileURL(entry).href, network: this.spec.network };
    const worker = new Worker(script, {
      workerData: setup,
      // The worker loads plain bundled JavaScript, so it goes without the TypeScript loader the
      // host may run under (`--import tsx`): its hooks cost every cold start a second of CPU.
      execArgv: withoutTypeScriptLoader(process.execArgv),
      env: this.spec.env,
      // What the function writes to stdout and stderr (warnings and errors) is its log, as CloudWatch
      // Logs gets it: read line by line.
      stdout: this.onOutput !== undefined,
      stderr: this.onOutput !== undefined,
    });
    if (this.onOutput) {
      const listener = this.onOutput;
      for (const output of [worker.stdout, worker.stderr]) {
        createInterface({ input: output, crlfDelay: Infinity }).on('line', (line) => listener(this.spec.functionId, line));
      }
    }
    this.worker = worker;
    worker.unref();
    const failAll = (error: Error) => {
      for (const { reject } of this.pending.values()) reject(error);
      this.pending.clear();
      this.worker = undefined;
      this.ready = undefined;
    };
    worker.on('error', (error) => failAll(error));
    worker.on('exit', (code) => failAll(new Error(`the ${this.spec.functionId} worker exited with code ${code}`)));
    return new Promise((resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (message: WorkerReply | WorkerReady) => {
        if ('ready' in message) return resolve(message.initMs);
        const waiting = this.pending.get(message.id);
        if (!waiting) return;
        this.pending.delete(message.id);
        if ('result' in message) return waiting.resolve(message.result);
        waiting.reject(Object.assign(new Error(message.error.message), { name: message.error.name, stack: message.error.stack }));
      });
    });
  }

  /** Runs one event; `onColdStart` hears the init time when this invocation started the worker. */
  async invoke(event: string, onColdStart?: (initMs: number) => void): Promise<string> {
    const cold = this.ready === undefined;
    this.ready ??= this.start();
    const initMs = await this.ready;
    if (cold) onColdStart?.(initMs);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker!.postMessage({ id, event } satisfies WorkerRequest);
    });
  }

  async stop(): Promise<void> {
    this.stops++;
    const worker = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    if (worker) await worker.terminate();
  }
}

/** A line a function wrote to stdout or stderr (its log), with the function's logical id. */
export type OutputListener = (functionId: string, line: string) => void;

export function createLocalLambda(options: { root: string; onOutput?: OutputListener }): LocalLambda {
  const versions = new Map<string, Map<number, FunctionWorker>>();
  const publishedAt = new Map<string, number>();
  const invocations: Invocation[] = [];
  const newest = (functionId: string) => Math.max(0, ...(versions.get(functionId)?.keys() ?? []));

  return {
    invocations,
    configuration: (functionId) => versions.get(functionId)?.get(newest(functionId))?.spec,
    publish(functions) {
      const published: Record<string, number> = {};
      for (const spec of functions) {
        const byVersion = versions.get(spec.functionId) ?? new Map<number, FunctionWorker>();
        versions.set(spec.functionId, byVersion);
        const version = newest(spec.functionId) + 1;
        byVersion.set(version, new FunctionWorker(options.root, spec, options.onOutput));
        publishedAt.set(`${spec.functionId}:${version}`, Date.now());
        published[spec.functionId] = version;
      }
      return published;
    },
    versions(functionId) {
      return [...(versions.get(functionId)?.keys() ?? [])]
        .sort((a, b) => a - b)
        .map((version) => ({ version, publishedAt: publishedAt.get(`${functionId}:${version}`)! }));
    },
    async remove(functionId, version) {
      const worker = versions.get(functionId)?.get(version);
      versions.get(functionId)?.delete(version);
      await worker?.stop();
    },
    async invoke(functionId, event, { version, kind = 'sync' } = {}) {
      const number = version ?? newest(functionId);
      const worker = versions.get(functionId)?.get(number);
      if (!worker) {
        throw Object.assign(new Error(`Function not found: ${functionId}${version ? `:${version}` : ''}`), {
          name: 'ResourceNotFoundException',
        });
      }
      const payload = JSON.stringify(event ?? null);
      const limit = kind === 'async' ? ASYNC_PAYLOAD_LIMIT : SYNC_REQUEST_LIMIT;
      const bytes = Buffer.byteLength(payload);
      if (bytes > limit) {
        throw new LambdaLimitExceeded(
          'RequestTooLargeException',
          `${functionId}: the ${kind} invocation's payload is ${bytes} bytes; Lambda accepts at most ${limit}`,
        );
      }
      const invocation: Invocation = { functionId, version: number, at: Date.now() };
      invocations.push(invocation);
      const result = await worker
        .invoke(payload, (initMs) => (invocation.initMs = initMs))
        .catch((error: unknown) => {
          invocation.error = error instanceof Error ? error.name : 'Error';
          throw error;
        })
        .finally(() => (invocation.endedAt = Date.now()));
      if (Buffer.byteLength(result) > SYNC_RESPONSE_LIMIT) {
        throw new LambdaLimitExceeded(
          'Function.ResponseSizeTooLarge',
          `${functionId}: the response is ${Buffer.byteLength(result)} bytes; Lambda returns at most ${SYNC_RESPONSE_LIMIT}`,
        );
      }
      return JSON.parse(result) as unknown;
    },
    async close() {
      await Promise.all([...versions.values()].flatMap((byVersion) => [...byVersion.values()].map((w) => w.stop())));
    },
  };
}

/** `execArgv` without `--import tsx` (in either spelling) and tsx's loader flags. */
export function withoutTypeScriptLoader(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if ((arg === '--import' || arg === '--require' || arg === '--loader') && /(^|\/)tsx(\/|$)/.test(execArgv[i + 1] ?? '')) {
      i++;
      continue;
    }
    if (/^--(import|require|loader)=.*\btsx\b/.test(arg)) continue;
    kept.push(arg);
  }
  return kept;
}
