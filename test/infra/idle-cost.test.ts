// The idle cost estimate `cdk synth` prints: the arithmetic per sandbox network mode, from the
// synthesized templates, and the line infra/app.ts writes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PROJECT_ROOT } from '../../infra/function-entries.ts';
import { estimateIdleCost, formatIdleCost, IDLE_COST_AFTER_SYNTH, idleCostLines } from '../../infra/idle-cost.ts';
import { runApp, synth } from './synth.ts';

// A synth costs seconds: each set of settings is synthesized once for the whole file.
const estimates = new Map<string, ReturnType<typeof estimateIdleCost>>();
function estimateFor(settings: Record<string, unknown>) {
  const key = JSON.stringify(settings);
  if (!estimates.has(key)) estimates.set(key, estimateIdleCost(synth({ settings }).template.toJSON()));
  return estimates.get(key)!;
}
const byWhat = (estimate: ReturnType<typeof estimateIdleCost>) =>
  Object.fromEntries(estimate.items.map((item) => [item.what, [item.count, item.monthlyUsd]]));

// In every mode: the alarm topic's key and the MCP tokens key, the Slack and Teams secrets, the
// dashboard, and the alarms' 32 metrics (10 functions x errors and throttles, the throttling rate's 2,
// 10 single-metric alarms).
const MONITORING_AND_SECRETS = {
  'KMS key': [2, 2],
  secret: [2, 0.8],
  'alarm metric': [32, 3.2],
  dashboard: [1, 3],
};
const BASE = 2 + 0.8 + 3.2 + 3;

test('isolated (the default): 3 interface endpoints x 1 AZ x $0.01/h x 730 h = $21.90 on top of the rest', () => {
  const estimate = estimateFor({});
  assert.deepEqual(byWhat(estimate), { 'interface endpoint x AZ': [3, 21.9], ...MONITORING_AND_SECRETS });
  assert.equal(estimate.monthlyUsd, 21.9 + BASE);
  // Each extra AZ adds the three endpoints once more.
  assert.deepEqual(byWhat(estimateFor({ sandboxAzs: 2 }))['interface endpoint x AZ'], [6, 43.8]);
});

test('egress: one NAT gateway ($0.045/h) and its Elastic IP ($0.005/h), 730 h each: $36.50', () => {
  const estimate = estimateFor({ sandboxNetwork: 'egress' });
  assert.deepEqual(byWhat(estimate), { 'NAT gateway': [1, 32.85], 'Elastic IP': [1, 3.65], ...MONITORING_AND_SECRETS });
  assert.equal(estimate.monthlyUsd, Math.round((32.85 + 3.65 + BASE) * 100) / 100);
  // More AZs change nothing: one NAT gateway serves them all.
  assert.equal(estimateFor({ sandboxNetwork: 'egress', sandboxAzs: 3 }).monthlyUsd, estimate.monthlyUsd);
});

test('public: no endpoints, no NAT gateway, no address while no task runs; Slack only: one secret and one function (two alarm metrics) fewer', () => {
  const estimate = estimateFor({ sandboxNetwork: 'public' });
  assert.deepEqual(byWhat(estimate), MONITORING_AND_SECRETS);
  assert.equal(estimate.monthlyUsd, BASE);
  assert.equal(estimateFor({ sandboxNetwork: 'public', chatPlatforms: 'slack' }).monthlyUsd, Math.round((BASE - 0.4 - 0.2) * 100) / 100);
});

test('the line names each item with its arithmetic', () => {
  assert.equal(
    formatIdleCost('Threadwork', estimateFor({ sandboxNetwork: 'egress' })),
    'Threadwork: estimated idle cost $45.50/month at us-east-1 list prices before the free tier (NAT gateway: 1 x $0.045/h x 730 h = $32.85; Elastic IP: 1 x $0.005/h x 730 h = $3.65; KMS key: 2 x $1.00/month = $2.00; secret: 2 x $0.40/month = $0.80; alarm metric: 32 x $0.10/month = $3.20; dashboard: 1 x $3.00/month = $3.00); use is billed on top (docs/cost.md)',
  );
});

test("docs/cost.md shows the line the default settings print, and each mode's total", () => {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs/cost.md'), 'utf8');
  assert.ok(doc.includes(formatIdleCost('Threadwork', estimateFor({}))), 'the example line is out of date');
  const totals = [{}, { sandboxNetwork: 'egress' }, { sandboxNetwork: 'public' }].map(
    (settings) => `**$${estimateFor(settings).monthlyUsd.toFixed(2)}**`,
  );
  assert.ok(doc.includes(`| **total printed by \`cdk synth\`** | ${totals.join(' | ')} |`), totals.join(', '));
});

test('infra/app.ts (what cdk synth runs) prints the estimate of the settings it synthesizes', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-idle-'));
  try {
    const run = runApp(outdir, { sandboxNetwork: 'isolated', stackName: 'CostCheck' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(
      run.stderr,
      /^CostCheck: estimated idle cost \$30\.90\/month .*interface endpoint x AZ: 3 x \$0\.01\/h x 730 h = \$21\.90;/m,
    );
    assert.doesNotMatch(run.stdout, /estimated idle cost/);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

test('npm run synth prints the template first and then the idle cost of each stack it synthesized', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-synth-'));
  try {
    const app = `${process.execPath} --import tsx test/fixtures/cdk/idle-app.ts`;
    // One stream for both, as a terminal shows them.
    const run = spawnSync('sh', ['-c', `"${process.execPath}" --import tsx infra/synth-cli.ts --app "${app}" -o "${outdir}" 2>&1`], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stdout);
    const template = run.stdout.indexOf('Type: AWS::EC2::NatGateway');
    const line = run.stdout.indexOf('IdleCheck: estimated idle cost $33.25/month');
    assert.ok(template >= 0 && line > template, run.stdout);
    assert.match(
      run.stdout.slice(line),
      /^IdleCheck: .*\(NAT gateway: 1 x \$0\.045\/h x 730 h = \$32\.85; secret: 1 x \$0\.40\/month = \$0\.40\)/,
    );
    assert.deepEqual(idleCostLines(outdir), [run.stdout.slice(line).split('\n')[0]]);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

test('the app leaves the line to npm run synth when that runs it', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-idle-'));
  try {
    const run = runApp(outdir, { stackName: 'CostCheck' }, { [IDLE_COST_AFTER_SYNTH]: '1' });
    assert.equal(run.status, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /estimated idle cost/);
    assert.match(idleCostLines(outdir)[0]!, /^CostCheck: estimated idle cost \$30\.90\/month/);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});
