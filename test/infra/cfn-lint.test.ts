// cfn-lint (AWS's CloudFormation linter: resource types, properties, values and intrinsics against
// the CloudFormation spec) on the template synthesized in each sandbox network mode: no finding of
// level Error. cfn-lint is a Python tool; .ci/run installs it with pip when it can, and where it is
// not installed this test skips, saying so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SANDBOX_NETWORK_MODES } from '../../infra/settings.ts';
import { synth } from './synth.ts';

interface Finding {
  Level: 'Error' | 'Warning' | 'Informational';
  Rule: { Id: string };
  Message: string;
  Filename: string;
  Location: { Path?: (string | number)[] };
}

/** How to run cfn-lint here: the command on PATH, else the module of python3; undefined if neither works. */
function findCfnLint(): string[] | undefined {
  for (const command of [['cfn-lint'], ['python3', '-m', 'cfnlint']]) {
    const probe = spawnSync(command[0]!, [...command.slice(1), '--version'], { encoding: 'utf8', timeout: 60_000 });
    if (probe.status === 0) return command;
  }
  return undefined;
}

/** Every finding on the files; a crash of cfn-lint (exit bit 1, or no JSON) throws with its output. */
function lint(cfnLint: string[], files: string[]): Finding[] {
  const run = spawnSync(cfnLint[0]!, [...cfnLint.slice(1), '--format', 'json', '--', ...files], {
    encoding: 'utf8',
    timeout: 540_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  // Exit status is a bit mask: 2 errors, 4 warnings, 8 informational; 1 is a fatal failure.
  if (run.error || run.status === null || run.status & 1) {
    throw new Error(`cfn-lint failed (${run.error?.message ?? `exit ${run.status ?? run.signal}`}): ${run.stderr}${run.stdout}`);
  }
  return JSON.parse(run.stdout || '[]') as Finding[];
}

const describe = (f: Finding) => `${f.Rule.Id} ${(f.Location.Path ?? []).join('.')}: ${f.Message}`;

const dir = mkdtempSync(join(tmpdir(), 'cfn-lint-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const cfnLint = findCfnLint();

test('cfn-lint finds no error in the template of any sandbox network mode', (t) => {
  if (!cfnLint) {
    t.skip('cfn-lint is not installed (neither `cfn-lint` nor `python3 -m cfnlint` runs): `pip install cfn-lint` to run this check');
    return;
  }
  const files = SANDBOX_NETWORK_MODES.map((mode) => {
    const file = join(dir, `${mode}.json`);
    writeFileSync(file, JSON.stringify(synth({ settings: { sandboxNetwork: mode } }).template.toJSON()));
    return file;
  });
  // A broken template beside them: the run must report it, so a silent linter cannot pass this test.
  const broken = join(dir, 'broken.json');
  writeFileSync(
    broken,
    JSON.stringify({ Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 'soon', NoSuchProperty: 1 } } } }),
  );
  const findings = lint(cfnLint, [...files, broken]);
  const errorsIn = (file: string) => findings.filter((f) => f.Filename === file && f.Level === 'Error').map(describe);
  assert.ok(
    errorsIn(broken).length >= 2,
    `cfn-lint reports the broken template: ${JSON.stringify(findings.filter((f) => f.Filename === broken))}`,
  );
  for (const [index, mode] of SANDBOX_NETWORK_MODES.entries()) {
    assert.deepEqual(errorsIn(files[index]!), [], `sandboxNetwork ${mode}`);
  }
});
