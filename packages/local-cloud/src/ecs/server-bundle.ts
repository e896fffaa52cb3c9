// The command server as the image runs it (plain node on one bundled file), for local tasks.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as esbuild } from 'esbuild';

/** Bundles containers/sandbox/server.ts into `directory`; returns the bundle's path. */
export async function bundleSandboxServer(directory: string): Promise<string> {
  const outfile = join(directory, 'server.mjs');
  await esbuild({
    entryPoints: [fileURLToPath(new URL('../../../../containers/sandbox/server.ts', import.meta.url))],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    logLevel: 'warning',
  });
  return outfile;
}
