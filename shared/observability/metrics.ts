// The functions' metrics as CloudWatch embedded metric format (EMF): JSON log lines that CloudWatch
// Logs turns into metrics, so publishing costs no API call and no IAM permission. Steps `put` what
// happened as it happens; the handler flushes once at the end of the invocation. Each metric goes
// out with its catalogue dimensions (shared/observability/metric-names.ts) and without any, as the deployment's
// total, in one document per distinct set of dimension values.
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS, type MetricName } from './metric-names.ts';

/** The dimension values a metric is published with: exactly its catalogue dimensions. */
export type DimensionsOf<N extends MetricName> = Record<(typeof METRICS)[N]['dimensions'][number], string>;

export interface MetricsSink {
  put<N extends MetricName>(name: N, value: number, dimensions: DimensionsOf<N>): void;
}

export interface EmfMetrics extends MetricsSink {
  /** The EMF documents of what was put since the last flush (a test reads them; flush writes them). */
  documents(): Record<string, unknown>[];
  /** Writes each document as one line and forgets them. */
  flush(): void;
}

const UNITS = { Count: MetricUnit.Count, Milliseconds: MetricUnit.Milliseconds, Seconds: MetricUnit.Seconds, None: MetricUnit.NoUnit };

interface Entry {
  name: MetricName;
  value: number;
  dimensions: Record<string, string>;
}

/** One EMF document: these values of these metrics, with these dimensions and as the total. */
function document(namespace: string, dimensions: Record<string, string>, entries: Entry[]): Record<string, unknown> {
  const metrics = new Metrics({ namespace });
  // Powertools adds a `service` dimension to every set by default; the catalogue has none.
  metrics.clearDefaultDimensions();
  if (Object.keys(dimensions).length) metrics.addDimensions(dimensions);
  metrics.addDimensions({});
  for (const entry of entries) metrics.addMetric(entry.name, UNITS[METRICS[entry.name].unit], entry.value);
  return metrics.serializeMetrics() as unknown as Record<string, unknown>;
}

// Powertools writes a document by itself once a metric holds 100 values; below that, the flush does.
const MAX_VALUES = 99;

export function emfMetrics(options: { namespace: string; write?: (line: string) => void }): EmfMetrics {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  let entries: Entry[] = [];
  const documents = () => {
    const groups = new Map<string, Entry[]>();
    for (const entry of entries) {
      const key = JSON.stringify(Object.entries(entry.dimensions).sort(([a], [b]) => a.localeCompare(b)));
      groups.set(key, [...(groups.get(key) ?? []), entry]);
    }
    return [...groups.values()].flatMap((group) => {
      const chunks: Entry[][] = [];
      for (let i = 0; i < group.length; i += MAX_VALUES) chunks.push(group.slice(i, i + MAX_VALUES));
      return chunks.map((chunk) => document(options.namespace, chunk[0]!.dimensions, chunk));
    });
  };
  return {
    put(name, value, dimensions) {
      // Only the catalogue's dimensions, whatever a caller passed: they bound the metric's cardinality.
      const kept = Object.fromEntries(METRICS[name].dimensions.map((d) => [d, (dimensions as Record<string, string>)[d] || 'unknown']));
      entries.push({ name, value, dimensions: kept });
    },
    documents,
    flush() {
      if (entries.length === 0) return;
      const out = documents();
      entries = [];
      for (const doc of out) write(JSON.stringify(doc));
    },
  };
}
