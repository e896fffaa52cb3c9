import { emfMetrics, type EmfMetrics } from '../observability/metrics.ts';

/** The stack sets METRICS_NAMESPACE to its name; a function run elsewhere publishes under `threadwork`. */
export function handlerMetrics(env = process.env): EmfMetrics {
  return emfMetrics({ namespace: env.METRICS_NAMESPACE || 'threadwork' });
}

/** Runs one invocation and publishes what it put, whether it succeeded or threw. */
export async function publishingMetrics<T>(metrics: EmfMetrics, invocation: () => Promise<T>): Promise<T> {
  try {
    return await invocation();
  } finally {
    metrics.flush();
  }
}
