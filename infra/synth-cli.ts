// `npm run synth [-- cdk synth options]`: `cdk synth`, and then, after the template it prints, what
// each synthesized stack costs while idle. (The app itself prints that line when `cdk` runs it
// directly, but the CLI prints the template after the app has ended, so the line would come first.)
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { IDLE_COST_AFTER_SYNTH, idleCostLines } from './idle-cost.ts';

/** Where `cdk synth` writes the assembly: its --output (-o), else cdk.out. */
export function assemblyDirOf(args: readonly string[]): string {
  for (const [i, arg] of args.entries()) {
    if (arg === '-o' || arg === '--output') return args[i + 1] ?? 'cdk.out';
    if (arg.startsWith('--output=')) return arg.slice('--output='.length);
  }
  return 'cdk.out';
}

const args = process.argv.slice(2);
const cdk = createRequire(import.meta.url).resolve('aws-cdk/bin/cdk');
const synth = spawnSync(process.execPath, [cdk, 'synth', ...args], {
  stdio: 'inherit',
  env: { ...process.env, [IDLE_COST_AFTER_SYNTH]: '1' },
});
const helped = args.includes('--help') || args.includes('-h');
if (synth.status === 0 && !helped) {
  for (const line of idleCostLines(resolve(assemblyDirOf(args)))) process.stderr.write(`${line}\n`);
}
process.exit(synth.status ?? 1);
