// Runs test files a few at a time, each in a process of its own with the tests in that process
// (`--experimental-test-isolation=none`), and fails if any file fails. Node's runner can do the
// fan-out itself (`--test-concurrency`), but with `--test-force-exit` it silently drops verdicts its
// child processes had sent (nodejs/node#64833: a CI run here reported 581 of 585 tests and passed):
// a file here exits by itself, so nothing is lost between processes.
//
//   tsx scripts/test/run-files.ts [--concurrency N] <test files...>
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values, positionals: files } = parseArgs({
  options: { concurrency: { type: 'string', default: '3' } },
  allowPositionals: true,
});
const concurrency = Math.max(1, Number(values.concurrency));
if (files.length === 0) {
  console.error('run-files: no test files given');
  process.exit(2);
}

interface FileRun {
  file: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  counts: Record<'tests' | 'pass' | 'fail', number>;
  ms: number;
}

function runFile(file: string): Promise<FileRun> {
  const started = Date.now();
  const args = ['--import', 'tsx', '--test', '--experimental-test-isolation=none', '--test-timeout=600000', '--test-force-exit', file];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => out.push(chunk));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const text = Buffer.concat(out).toString('utf8');
      // Each file's output at once, as it ends, so files never interleave.
      process.stdout.write(`# file: ${file}\n${text}`);
      const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      resolve({
        file,
        code,
        signal,
        counts: { tests: count('tests'), pass: count('pass'), fail: count('fail') },
        ms: Date.now() - started,
      });
    });
  });
}

const queue = [...files];
const runs: FileRun[] = [];
await Promise.all(
  Array.from({ length: Math.min(concurrency, files.length) }, async () => {
    for (let file = queue.shift(); file; file = queue.shift()) runs.push(await runFile(file));
  }),
);

const failed = runs.filter((run) => run.code !== 0 || run.counts.fail > 0 || run.counts.tests === 0);
const total = (key: keyof FileRun['counts']) => runs.reduce((sum, run) => sum + run.counts[key], 0);
console.log(`# files ${runs.length}, tests ${total('tests')}, pass ${total('pass')}, fail ${total('fail')}`);
for (const run of failed) {
  const why = run.signal ? `killed by ${run.signal}` : run.counts.tests === 0 ? 'reported no tests' : `exit code ${run.code}`;
  console.log(`# FAILED ${run.file}: ${why}, ${run.counts.fail} failing of ${run.counts.tests} (${Math.round(run.ms / 1000)} s)`);
}
process.exit(failed.length ? 1 : 0);
