// One Lambda function version in its own worker thread: its own module instances (so its own SDK
// clients and credentials), its own environment, its own network. The parent sends events as JSON
// text and gets results back as JSON text, as Lambda would serialize them.
import { parentPort, workerData } from 'node:worker_threads';
import { installNetworkGuard } from './network-guard.ts';
import type { WorkerNetwork } from './network-policy.ts';

export interface WorkerSetup {
  /** Absolute file URL of the handler module; it exports `handler`. */
  entry: string;
  network: WorkerNetwork;
}

export type WorkerRequest = { id: number; event: string };
export type WorkerReply = { id: number; result: string } | { id: number; error: { name: string; message: string; stack?: string } };
/** Sent once the handler module is loaded: how long loading it (its top-level code included) took. */
export type WorkerReady = { ready: true; initMs: number };

const setup = workerData as WorkerSetup;
// Bundles carry source maps: stack traces name the TypeScript sources.
process.setSourceMapsEnabled(true);
installNetworkGuard(setup.network);
const loading = performance.now();
const { handler } = (await import(setup.entry)) as { handler: (event: unknown) => Promise<unknown> };
const initMs = performance.now() - loading;

parentPort!.on('message', async ({ id, event }: WorkerRequest) => {
  let reply: WorkerReply;
  try {
    const result = await handler(JSON.parse(event));
    reply = { id, result: JSON.stringify(result ?? null) };
  } catch (caught) {
    const error = caught instanceof Error ? caught : new Error(String(caught));
    reply = { id, error: { name: error.name, message: error.message, stack: error.stack } };
  }
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ ready: true, initMs } satisfies WorkerReady);
