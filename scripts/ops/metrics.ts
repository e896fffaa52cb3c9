// `npm run ops -- metrics [--name X]`: per metric, the sum, count, p50 and p99 of what the functions
// published, in total and per set of dimension values. Locally from the local stack's summary
// endpoint (since it started); for a deployed stack from CloudWatch (ListMetrics, GetMetricData),
// over the last `hours`.
import {
  GetMetricDataCommand,
  ListMetricsCommand,
  type CloudWatchClient,
  type Metric,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import { forTerminal } from '../../shared/support/display.ts';
import { METRICS } from '../../shared/observability/metric-names.ts';
import type { MetricSummary, Statistics } from '../../packages/local-cloud/src/metrics.ts';

/** The local stack's summary (GET /metrics), since it started. */
export async function localMetrics(endpoint: string, name?: string): Promise<MetricSummary[]> {
  const url = `${endpoint}/metrics${name ? `?name=${encodeURIComponent(name)}` : ''}`;
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`the local stack's metrics are not reachable at ${endpoint} (is npm start running?): ${(error as Error).message}`);
  }
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { metrics: MetricSummary[] }).metrics;
}

const STATISTICS = { sum: 'Sum', count: 'SampleCount', p50: 'p50', p99: 'p99' } as const;
// GetMetricData takes at most 500 queries a call.
const QUERIES_PER_CALL = 500;

async function listAll(cloudWatch: CloudWatchClient, namespace: string, name?: string): Promise<Metric[]> {
  const metrics: Metric[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudWatch.send(new ListMetricsCommand({ Namespace: namespace, MetricName: name, NextToken }));
    metrics.push(...(page.Metrics ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return metrics;
}

/** A deployed stack's metrics (namespace = the stack's name) over the last `hours`. */
export async function cloudWatchMetrics(
  cloudWatch: CloudWatchClient,
  namespace: string,
  options: { name?: string; hours: number; now?: Date },
): Promise<MetricSummary[]> {
  const end = options.now ?? new Date();
  const period = Math.ceil(options.hours * 60) * 60;
  const start = new Date(end.getTime() - period * 1000);
  const metrics = await listAll(cloudWatch, namespace, options.name);
  const queries: MetricDataQuery[] = metrics.flatMap((metric, i) =>
    Object.entries(STATISTICS).map(([key, Stat]) => ({
      Id: `m${i}_${key}`,
      MetricStat: { Metric: metric, Period: period, Stat },
      ReturnData: true,
    })),
  );
  const values = new Map<string, number[]>();
  for (let i = 0; i < queries.length; i += QUERIES_PER_CALL) {
    let NextToken: string | undefined;
    do {
      const page = await cloudWatch.send(
        new GetMetricDataCommand({ MetricDataQueries: queries.slice(i, i + QUERIES_PER_CALL), StartTime: start, EndTime: end, NextToken }),
      );
      for (const result of page.MetricDataResults ?? [])
        values.set(result.Id!, [...(values.get(result.Id!) ?? []), ...(result.Values ?? [])]);
      NextToken = page.NextToken;
    } while (NextToken);
  }
  const statisticsOf = (i: number): Statistics => {
    const of = (key: keyof typeof STATISTICS) => values.get(`m${i}_${key}`) ?? [];
    return {
      sum: of('sum').reduce((a, b) => a + b, 0),
      count: of('count').reduce((a, b) => a + b, 0),
      p50: Math.max(0, ...of('p50')),
      p99: Math.max(0, ...of('p99')),
    };
  };
  const byName = new Map<string, MetricSummary>();
  metrics.forEach((metric, i) => {
    const name = metric.MetricName!;
    const summary = byName.get(name) ?? {
      name,
      unit: METRICS[name as keyof typeof METRICS]?.unit ?? 'None',
      sum: 0,
      count: 0,
      p50: 0,
      p99: 0,
      byDimensions: [],
    };
    byName.set(name, summary);
    const statistics = statisticsOf(i);
    const dimensions = Object.fromEntries((metric.Dimensions ?? []).map((d) => [d.Name!, d.Value!]));
    // The dimensionless metric is the deployment's total.
    if (Object.keys(dimensions).length === 0) Object.assign(summary, statistics);
    else summary.byDimensions.push({ dimensions, ...statistics });
  });
  return [...byName.values()]
    .filter((s) => s.count > 0 || s.byDimensions.some((d) => d.count > 0))
    .sort((a, b) => a.name.localeCompare(b.name));
}

const number = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(Math.abs(n) < 1 ? 6 : 2));

/** A table: one line per metric (its total), then one per set of dimension values. */
export function formatMetrics(summaries: MetricSummary[]): string {
  if (summaries.length === 0) return 'no metrics published yet';
  const rows: string[][] = [['metric', 'unit', 'sum', 'count', 'p50', 'p99']];
  const stats = (s: Statistics) => [number(s.sum), String(s.count), number(s.p50), number(s.p99)];
  for (const summary of summaries) {
    rows.push([forTerminal(summary.name), summary.unit, ...stats(summary)]);
    for (const group of summary.byDimensions) {
      // Dimension values can come from the model (a tool's name): shown inert.
      const label = Object.entries(group.dimensions)
        .map(([key, value]) => forTerminal(`${key}=${value}`))
        .join(' ');
      rows.push([`  ${label}`, '', ...stats(group)]);
    }
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
