// What a function's worker loads: its handler as one bundled file, as Lambda loads one, made once per
// process by esbuild. Loading the TypeScript sources through tsx instead cost every cold start one
// to two seconds of CPU (a loader thread per worker, each module transformed and resolved on its
// own), and the tests cold-start hundreds of workers. Packages stay outside the bundle (the worker
// imports them from node_modules as before), so a bundle takes a fraction of a second to make.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const bundles = new Map<string, Promise<string>>();
let directory: string | undefined;

/** This process's folder of bundles, inside the project so that packages resolve from its node_modules. */
function bundleDirectory(root: string): string {
  if (directory) return directory;
  const parent = join(root, 'node_modules', '.cache', 'local-cloud', 'lambda');
  mkdirSync(parent, { recursive: true });
  const made = mkdtempSync(join(parent, `${process.pid}-`));
  process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  return (directory = made);
}

function bundle(root: string, source: string, name: string): Promise<string> {
  const key = `${root}\0${source}`;
  let made = bundles.get(key);
  if (!made) {
    const outfile = join(bundleDirectory(root), `${bundles.size}-${name}.mjs`);
    made = build({
      entryPoints: [source],
      outfile,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node22',
      // Names and stack traces as in the sources (errors cross the worker boundary with their names).
      keepNames: true,
      sourcemap: 'inline',
      logLevel: 'warning',
    }).then(() => outfile);
    // A failed build is not kept: the next cold start tries again (and reports the error again).
    made.catch(() => bundles.delete(key));
    bundles.set(key, made);
  }
  return made;
}

/** The handler module `entry` (relative to `root`), bundled; returns the bundle's path. */
export const handlerBundle = (root: string, entry: string): Promise<string> =>
  bundle(root, join(root, entry), entry.replaceAll('/', '-').replace(/\.ts$/, ''));

/** The worker's own script (worker.ts), bundled. */
export const workerBundle = (root: string): Promise<string> =>
  bundle(root, fileURLToPath(new URL('./worker.ts', import.meta.url)), 'worker');
