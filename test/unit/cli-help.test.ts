// Every npm script of ours takes --help, and a wrong option or a missing value is one line that
// says where the options are, never a stack trace: each entry point run as `npm run` runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { asksForHelp, usageErrorLine } from '../../shared/support/cli-args.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const SCRIPTS = {
  start: 'packages/local-cloud/src/main.ts',
  chat: 'packages/local-cloud/src/chat-cli.ts',
  ops: 'scripts/ops/main.ts',
  settings: 'scripts/settings/main.ts',
  doctor: 'scripts/doctor/main.ts',
  bench: 'bench/run.ts',
  'teams:package': 'infra/teams-app/package.ts',
} as const;

function npmRun(script: keyof typeof SCRIPTS, args: string[]) {
  const running = promisify(execFile)(process.execPath, ['--import', 'tsx', SCRIPTS[script], ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '' },
  });
  running.child.stdin?.end();
  return running.then(
    (out) => ({ ...out, code: 0 }),
    (error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, code: error.code }),
  );
}

test('--help asks for help before a `--` terminator only', () => {
  assert.equal(asksForHelp(['--help']), true);
  assert.equal(asksForHelp(['-t', '1.2', '-h']), true);
  assert.equal(asksForHelp(['--', '--help']), false);
  assert.equal(asksForHelp(['what does --help do?']), false);
});

test("a parse error is node's first sentence and where the options are", () => {
  const error = new TypeError("Unknown option '--x'. To specify a positional argument starting with a '-', place it at the end.");
  assert.equal(usageErrorLine(error, 'chat'), "Unknown option '--x' (npm run chat -- --help lists the options)");
});

for (const script of Object.keys(SCRIPTS) as (keyof typeof SCRIPTS)[]) {
  test(`npm run ${script} -- --help prints its usage; an unknown option is one line and exit 2`, async () => {
    const help = await npmRun(script, ['--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, new RegExp(`^usage: (TEAMS_APP_ID=<guid> )?npm (run )?${script === 'start' ? 'start' : script}`));
    const wrong = await npmRun(script, ['--no-such-option']);
    assert.equal(wrong.code, 2, `${wrong.stdout}${wrong.stderr}`);
    assert.equal(wrong.stderr.trim(), `Unknown option '--no-such-option' (npm run ${script} -- --help lists the options)`);
  });
}

test('npm start -- --help lists --persist and says what it keeps', async () => {
  const help = await npmRun('start', ['--help']);
  assert.match(help.stdout, /--persist/);
  assert.match(help.stdout, /state table \(DynamoDB Local\) is kept in \.local\//);
});

test('a missing or bad option value is one line too', async () => {
  const out = await npmRun('ops', ['metrics', '--hours']);
  assert.equal(out.code, 2);
  assert.equal(out.stderr.trim(), "Option '--hours <value>' argument missing (npm run ops -- --help lists the options)");
  const bench = await npmRun('bench', ['--only', '9']);
  assert.equal(bench.code, 2);
  assert.equal(bench.stderr.trim(), '--only takes section numbers 1,2,3,4,5,6,7,8 separated by commas; got "9"');
  const doctor = await npmRun('doctor', ['--timeout-seconds', 'soon']);
  assert.equal(doctor.code, 2);
  assert.equal(doctor.stderr.trim(), '--timeout-seconds must be a positive number, got "soon"');
});
