// Every minute: stop the sandboxes nobody used for SANDBOX_IDLE_MINUTES (their files are in S3),
// and any sandbox task that no record owns.
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { ecsClient } from '../../shared/aws/ecs.ts';
import { readEnv, sandboxReaperEnv } from '../../shared/env.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { sandboxConfigFromEnv } from '../../shared/handler-context/sandbox.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { reapIdleSandboxes, sweepOrphanedTasks } from '../../shared/sandbox/lifecycle.ts';

const logger = handlerLogger('sandbox-reaper');
const metrics = handlerMetrics();
const deps = lazy(() => {
  const env = readEnv(sandboxReaperEnv);
  // The schema requires SANDBOX_CLUSTER_ARN, so there is a config.
  return { db: dbClient(), tableName: env.TABLE_NAME, ecs: ecsClient(), config: sandboxConfigFromEnv(env)!, metrics };
});

export async function handler() {
  return publishingMetrics(metrics, sweep);
}

async function sweep() {
  const reaper = await deps();
  const stopped = await reapIdleSandboxes(reaper);
  if (stopped.length) logger.info('idle sandboxes stopped', { threads: stopped });
  const orphans = await sweepOrphanedTasks(reaper);
  if (orphans.length) logger.warn('orphaned sandbox tasks stopped', { tasks: orphans });
  return { stopped: stopped.length, orphans: orphans.length };
}
