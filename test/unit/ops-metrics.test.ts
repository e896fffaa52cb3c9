// `npm run ops -- metrics`: the functions' EMF lines, read as the local cloud reads their output,
// summed up per metric (sum, count, p50, p99) and served to the CLI; a deployed stack's come from
// CloudWatch (ListMetrics under the stack's namespace, then GetMetricData).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { emfMetrics } from '../../shared/observability/metrics.ts';
import { createLocalMetrics, percentile, startLocalMetricsEndpoint } from '../../packages/local-cloud/src/metrics.ts';
import { cloudWatchMetrics, formatMetrics, localMetrics } from '../../scripts/ops/metrics.ts';

const run = promisify(execFile);

test('percentiles by nearest rank', () => {
  const values = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(values, 50), 50);
  assert.equal(percentile(values, 99), 99);
  assert.equal(percentile([7], 99), 7);
  assert.equal(percentile([], 50), 0);
});

test('metrics: EMF lines become per-metric statistics, served locally and printed by the CLI', async (t) => {
  const local = createLocalMetrics();
  const published = emfMetrics({ namespace: 'Threadwork', write: (line) => assert.ok(local.record('AgentStep', line)) });
  for (const ms of [100, 200, 300, 400]) published.put('RunDuration', ms, { adapter: 'slack', trigger: 'message' });
  published.put('RunDuration', 1000, { adapter: 'teams', trigger: 'schedule' });
  published.put('ToolCalls', 1, { tool: 'bash' });
  published.put('ToolCalls', 1, { tool: 'bash' });
  published.put('ToolCalls', 1, { tool: 'upload' });
  published.flush();
  assert.equal(local.record('AgentStep', '{"level":"INFO","message":"model step"}'), false, 'a log line is no metric');
  assert.equal(local.record('AgentStep', '{"_aws": not json'), false);

  const endpoint = await startLocalMetricsEndpoint(local);
  t.after(() => endpoint.close());
  const all = await localMetrics(endpoint.url);
  assert.deepEqual(
    all.map((m) => m.name),
    ['RunDuration', 'ToolCalls'],
  );
  const duration = all[0]!;
  assert.deepEqual(
    { unit: duration.unit, sum: duration.sum, count: duration.count, p50: duration.p50, p99: duration.p99 },
    { unit: 'Milliseconds', sum: 2000, count: 5, p50: 300, p99: 1000 },
  );
  assert.deepEqual(duration.byDimensions, [
    { dimensions: { adapter: 'slack', trigger: 'message' }, sum: 1000, count: 4, p50: 200, p99: 400 },
    { dimensions: { adapter: 'teams', trigger: 'schedule' }, sum: 1000, count: 1, p50: 1000, p99: 1000 },
  ]);
  const tools = await localMetrics(endpoint.url, 'ToolCalls');
  assert.equal(tools.length, 1);
  assert.deepEqual(
    tools[0]!.byDimensions.map((d) => [d.dimensions.tool, d.count]),
    [
      ['bash', 2],
      ['upload', 1],
    ],
  );
  const table = formatMetrics(tools).split('\n');
  assert.match(table[0]!, /^metric\s+unit\s+sum\s+count\s+p50\s+p99$/);
  assert.match(table[1]!, /^ToolCalls\s+Count\s+3\s+3\s+1\s+1$/);
  assert.match(table[2]!, /^ {2}tool=bash\s+2\s+2\s+1\s+1$/);
  assert.equal(formatMetrics([]), 'no metrics published yet');

  // The CLI, as an operator runs it against npm start.
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/ops/main.ts', 'metrics', ...args], {
      env: { ...process.env, LOCAL_METRICS_URL: endpoint.url },
    });
  const { stdout } = await cli('--name', 'RunDuration');
  assert.match(stdout, /^RunDuration\s+Milliseconds\s+2000\s+5\s+300\s+1000$/m);
  assert.match(stdout, /^ {2}adapter=teams trigger=schedule\s+1000\s+1\s+1000\s+1000$/m);
  assert.doesNotMatch(stdout, /ToolCalls/);
  await assert.rejects(cli('--hours', '0', '--stack', 'x'), (error: { code: number; stderr: string }) => {
    assert.equal(error.code, 2);
    assert.match(error.stderr, /--hours must be a positive number/);
    return true;
  });
  await endpoint.close();
  await assert.rejects(localMetrics(endpoint.url), /not reachable at .* \(is npm start running\?\)/);
});

test('metrics --stack: ListMetrics under the stack namespace, GetMetricData for each metric, the dimensionless one as the total', async () => {
  // CloudWatch's answers, given to the real SDK client where it would send its request.
  const asked: { command: string; input: Record<string, unknown> }[] = [];
  const cloudWatch = new CloudWatchClient({ region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 's' } });
  const runsStarted = (dimensions: { Name: string; Value: string }[]) => ({
    Namespace: 'MyStack',
    MetricName: 'RunsStarted',
    Dimensions: dimensions,
  });
  cloudWatch.middlewareStack.add(
    (_next, context) => async (args) => {
      const command = String(context.commandName);
      const input = args.input as Record<string, unknown>;
      asked.push({ command, input });
      if (command === 'ListMetricsCommand') {
        const output = input.NextToken
          ? {
              Metrics: [
                runsStarted([
                  { Name: 'adapter', Value: 'slack' },
                  { Name: 'trigger', Value: 'message' },
                ]),
              ],
            }
          : { Metrics: [runsStarted([])], NextToken: 'page-2' };
        return { output, response: {} } as never;
      }
      const values: Record<string, number[]> = {
        m0_sum: [3, 2],
        m0_count: [3, 2],
        m0_p50: [1],
        m0_p99: [1],
        m1_sum: [4],
        m1_count: [4],
        m1_p50: [1],
        m1_p99: [1],
      };
      const queries = input.MetricDataQueries as { Id: string }[];
      return { output: { MetricDataResults: queries.map((q) => ({ Id: q.Id, Values: values[q.Id] ?? [] })) }, response: {} } as never;
    },
    { step: 'initialize' },
  );
  const now = new Date('2026-11-24T12:00:00Z');
  const summaries = await cloudWatchMetrics(cloudWatch, 'MyStack', { name: 'RunsStarted', hours: 2, now });
  assert.deepEqual(
    asked.map((a) => a.command),
    ['ListMetricsCommand', 'ListMetricsCommand', 'GetMetricDataCommand'],
  );
  assert.deepEqual(asked[0]!.input, { Namespace: 'MyStack', MetricName: 'RunsStarted', NextToken: undefined });
  const data = asked[2]!.input as {
    StartTime: Date;
    EndTime: Date;
    MetricDataQueries: { Id: string; MetricStat: { Period: number; Stat: string } }[];
  };
  assert.equal(data.EndTime.toISOString(), now.toISOString());
  assert.equal(data.StartTime.toISOString(), '2026-11-24T10:00:00.000Z');
  assert.deepEqual(
    data.MetricDataQueries.map((q) => [q.Id, q.MetricStat.Stat, q.MetricStat.Period]),
    [
      ['m0_sum', 'Sum', 7200],
      ['m0_count', 'SampleCount', 7200],
      ['m0_p50', 'p50', 7200],
      ['m0_p99', 'p99', 7200],
      ['m1_sum', 'Sum', 7200],
      ['m1_count', 'SampleCount', 7200],
      ['m1_p50', 'p50', 7200],
      ['m1_p99', 'p99', 7200],
    ],
  );
  assert.deepEqual(summaries, [
    {
      name: 'RunsStarted',
      unit: 'Count',
      sum: 5,
      count: 5,
      p50: 1,
      p99: 1,
      byDimensions: [{ dimensions: { adapter: 'slack', trigger: 'message' }, sum: 4, count: 4, p50: 1, p99: 1 }],
    },
  ]);
});
