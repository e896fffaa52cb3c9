// Cold starts per function, two ways. In the local cloud: the init time the local Lambda records on
// each invocation that started a function's worker (loading its handler module, top-level code
// included; the test bundle, with packages outside it). From the deployed bundles (section 4): a
// fresh Node process importing index.mjs, the runtime's AWS SDK clients with it, as Lambda's init
// loads it; the median of a few, since the machine is noisy.
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type { FunctionRole } from '../infra/function-entries.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { roleOf } from './breakdown.ts';

/** The init times of the cold starts the local cloud saw so far, by function. */
export function localInitTimes(stack: TestStack): Partial<Record<FunctionRole, number[]>> {
  const times: Partial<Record<FunctionRole, number[]>> = {};
  for (const invocation of stack.cloud.lambda.invocations) {
    const role = roleOf(stack, invocation);
    if (role && invocation.initMs !== undefined) (times[role] ??= []).push(invocation.initMs);
  }
  return times;
}

export const IMPORT_RUNS = 3;

/** Median ms for a fresh Node process to import the bundle (undefined when it fails to load). */
export function bundleImportMs(indexMjs: string): number | undefined {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(indexMjs).href)}); process.stdout.write(String(performance.now() - t));`;
  const runs: number[] = [];
  for (let i = 0; i < IMPORT_RUNS; i++) {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    if (run.status !== 0) return undefined;
    runs.push(Number(run.stdout));
  }
  return runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)];
}
