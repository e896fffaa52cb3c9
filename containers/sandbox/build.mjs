// Bundles the command server into one file for the container image:
//   node containers/sandbox/build.mjs   →   containers/sandbox/dist/server.mjs
// The server uses Node built-ins only, so the bundle has no node_modules next to it.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

await build({
  entryPoints: [`${here}server.ts`],
  outfile: `${here}dist/server.mjs`,
  bundle: true,
  platform: 'node',
  format: 'esm',
  // The image's Node major; the local Node (20+) runs this output too.
  target: 'node20',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
});
console.log(`bundled ${here}dist/server.mjs`);
