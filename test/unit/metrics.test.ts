import assert from 'node:assert/strict';
import { test } from 'node:test';
import { METRICS } from '../../shared/observability/metric-names.ts';
import { emfMetrics } from '../../shared/observability/metrics.ts';

type Emf = {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
};

test('EMF: one document per set of dimension values, with the catalogue dimensions and the dimensionless total', () => {
  const lines: string[] = [];
  const metrics = emfMetrics({ namespace: 'my-stack', write: (line) => lines.push(line) });
  metrics.put('RunsStarted', 1, { adapter: 'slack', trigger: 'message' });
  metrics.put('RunsStarted', 1, { adapter: 'slack', trigger: 'message' });
  metrics.put('RunsStarted', 1, { adapter: 'teams', trigger: 'schedule' });
  metrics.put('RunDuration', 1234, { adapter: 'slack', trigger: 'message' });
  metrics.put('TimeToFirstToken', 321, { model: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0' });
  metrics.put('CostUsd', 0.0123, { adapter: 'slack', trigger: 'message' });
  metrics.put('SandboxesRunning', 2, {});
  metrics.flush();
  const docs = lines.map((line) => JSON.parse(line) as Emf);
  assert.equal(docs.length, 4);
  for (const doc of docs) {
    assert.equal(doc._aws.CloudWatchMetrics.length, 1);
    assert.equal(doc._aws.CloudWatchMetrics[0]!.Namespace, 'my-stack');
    assert.ok(Math.abs(doc._aws.Timestamp - Date.now()) < 60_000);
    assert.equal(doc.service, undefined, 'no service dimension');
    // The total: every document also publishes its metrics without dimensions.
    assert.deepEqual(doc._aws.CloudWatchMetrics[0]!.Dimensions.at(-1), []);
  }
  const [slack, teams, model, gauge] = docs;
  assert.deepEqual(slack!._aws.CloudWatchMetrics[0], {
    Namespace: 'my-stack',
    Dimensions: [['adapter', 'trigger'], []],
    Metrics: [
      { Name: 'RunsStarted', Unit: 'Count' },
      { Name: 'RunDuration', Unit: 'Milliseconds' },
      { Name: 'CostUsd', Unit: 'None' },
    ],
  });
  assert.equal(slack!.adapter, 'slack');
  assert.equal(slack!.trigger, 'message');
  assert.deepEqual(slack!.RunsStarted, [1, 1], 'two values of one metric in one document');
  assert.equal(slack!.RunDuration, 1234);
  assert.equal(slack!.CostUsd, 0.0123);
  assert.equal(teams!.adapter, 'teams');
  assert.equal(teams!.RunsStarted, 1);
  assert.deepEqual(model!._aws.CloudWatchMetrics[0]!.Dimensions, [['model'], []]);
  assert.deepEqual(model!._aws.CloudWatchMetrics[0]!.Metrics, [{ Name: 'TimeToFirstToken', Unit: 'Milliseconds' }]);
  assert.deepEqual(gauge!._aws.CloudWatchMetrics[0]!.Dimensions, [[]], 'a metric without dimensions: the total only');
  assert.equal(gauge!.SandboxesRunning, 2);
  assert.equal(metrics.documents().length, 0, 'flushed: nothing left');
  metrics.flush();
  assert.equal(lines.length, 4, 'an empty flush writes nothing');
});

test('EMF: only the catalogue dimensions, never a high-cardinality one, and every unit as the catalogue says', () => {
  const metrics = emfMetrics({ namespace: 'n', write: () => undefined });
  const extra = { tool: 'bash', threadId: 'slack:C1:1.2', user: 'U1' } as unknown as { tool: string };
  metrics.put('ToolCalls', 1, extra);
  const [doc] = metrics.documents() as Emf[];
  assert.deepEqual(doc!._aws.CloudWatchMetrics[0]!.Dimensions, [['tool'], []]);
  assert.equal(doc!.threadId, undefined);
  assert.equal(doc!.user, undefined);

  const all = emfMetrics({ namespace: 'n', write: () => undefined });
  for (const [name, spec] of Object.entries(METRICS)) {
    all.put(name as 'SandboxesRunning', 1, Object.fromEntries(spec.dimensions.map((d) => [d, 'x'])) as never);
  }
  const units = new Map(
    (all.documents() as Emf[]).flatMap((d) => d._aws.CloudWatchMetrics[0]!.Metrics.map((m) => [m.Name, m.Unit] as const)),
  );
  for (const [name, spec] of Object.entries(METRICS)) assert.equal(units.get(name), spec.unit, name);
});

test('EMF: over 100 values of a metric go out in more than one document (Powertools would write the 100th itself)', () => {
  const lines: string[] = [];
  const metrics = emfMetrics({ namespace: 'n', write: (line) => lines.push(line) });
  for (let i = 0; i < 150; i++) metrics.put('ToolCalls', 1, { tool: 'bash' });
  metrics.flush();
  const values = lines.flatMap((line) => (JSON.parse(line) as Emf).ToolCalls as number[]);
  assert.equal(lines.length, 2);
  assert.equal(values.length, 150);
});
