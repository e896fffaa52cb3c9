// CloudWatch metrics, locally: the functions' EMF log lines (shared/observability/metrics.ts) are read from their
// output as CloudWatch Logs would read them, kept as data points, and summed up per metric. A small
// HTTP endpoint serves the summary to `npm run ops -- metrics`.
import { listenLocally, type LocalHttpServer } from './http-server.ts';

export interface MetricPoint {
  namespace: string;
  name: string;
  unit: string;
  value: number;
  /** The dimension values it was published with (empty: the total only). */
  dimensions: Record<string, string>;
  /** The document's timestamp, epoch milliseconds. */
  at: number;
  /** The function (logical id) that published it. */
  functionId: string;
}

export interface Statistics {
  sum: number;
  count: number;
  p50: number;
  p99: number;
}

export interface MetricSummary extends Statistics {
  name: string;
  unit: string;
  /** The same statistics per set of dimension values. */
  byDimensions: (Statistics & { dimensions: Record<string, string> })[];
}

export interface LocalMetrics {
  /** Takes one line of a function's output; true when it was an EMF document (its points are kept). */
  record(functionId: string, line: string): boolean;
  readonly points: readonly MetricPoint[];
  /** Per metric (all of them, or one by name), since the cloud started. */
  summary(name?: string): MetricSummary[];
}

interface EmfDocument {
  _aws?: {
    Timestamp?: number;
    CloudWatchMetrics?: { Namespace?: string; Dimensions?: string[][]; Metrics?: { Name: string; Unit?: string }[] }[];
  };
  [key: string]: unknown;
}

/** Nearest rank: the smallest value with at least `p` % of the values at or below it. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function statisticsOf(values: readonly number[]): Statistics {
  const sorted = [...values].sort((a, b) => a - b);
  return { sum: sorted.reduce((a, b) => a + b, 0), count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

function pointsOf(functionId: string, doc: EmfDocument): MetricPoint[] {
  const points: MetricPoint[] = [];
  for (const directive of doc._aws?.CloudWatchMetrics ?? []) {
    // The widest dimension set names the values; the empty set is the total every point counts in.
    const keys = (directive.Dimensions ?? []).reduce<string[]>((widest, set) => (set.length > widest.length ? set : widest), []);
    const dimensions = Object.fromEntries(keys.map((key) => [key, String(doc[key])]));
    for (const metric of directive.Metrics ?? []) {
      const raw = doc[metric.Name];
      for (const value of Array.isArray(raw) ? raw : [raw]) {
        if (typeof value !== 'number') continue;
        points.push({
          namespace: directive.Namespace ?? '',
          name: metric.Name,
          unit: metric.Unit ?? 'None',
          value,
          dimensions,
          at: doc._aws?.Timestamp ?? Date.now(),
          functionId,
        });
      }
    }
  }
  return points;
}

export function createLocalMetrics(): LocalMetrics {
  const points: MetricPoint[] = [];
  return {
    points,
    record(functionId, line) {
      if (!line.startsWith('{"_aws"')) return false;
      try {
        points.push(...pointsOf(functionId, JSON.parse(line) as EmfDocument));
        return true;
      } catch {
        return false;
      }
    },
    summary(name) {
      const byName = new Map<string, MetricPoint[]>();
      for (const point of points) if (!name || point.name === name) byName.set(point.name, [...(byName.get(point.name) ?? []), point]);
      return [...byName.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([metric, all]) => {
          const groups = new Map<string, MetricPoint[]>();
          for (const point of all) {
            const key = JSON.stringify(Object.entries(point.dimensions).sort(([a], [b]) => a.localeCompare(b)));
            groups.set(key, [...(groups.get(key) ?? []), point]);
          }
          return {
            name: metric,
            unit: all[0]!.unit,
            ...statisticsOf(all.map((p) => p.value)),
            byDimensions: [...groups.values()]
              .filter((group) => Object.keys(group[0]!.dimensions).length > 0)
              .map((group) => ({ dimensions: group[0]!.dimensions, ...statisticsOf(group.map((p) => p.value)) })),
          };
        });
    },
  };
}

/** GET /metrics[?name=X]: the summary as JSON, for `npm run ops -- metrics`. */
export function startLocalMetricsEndpoint(metrics: LocalMetrics, port?: number): Promise<LocalHttpServer> {
  const startedAt = new Date().toISOString();
  return listenLocally(
    (request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (request.method !== 'GET' || url.pathname !== '/metrics') {
        response
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: `No route ${request.method} ${url.pathname}` }));
        return;
      }
      const summary = metrics.summary(url.searchParams.get('name') ?? undefined);
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ since: startedAt, metrics: summary }));
    },
    { port },
  );
}
