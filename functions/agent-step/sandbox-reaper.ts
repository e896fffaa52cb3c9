// Every minute: stop the sandboxes nobody used for SANDBOX_IDLE_MINUTES (their files are in S3),
// and any sandbox task that no record owns.
import { clients, requireEnv } from '../../shared/aws.ts';
import { handlerLogger, sandboxConfigFromEnv } from '../../shared/handler-context.ts';
import { reapIdleSandboxes, sweepOrphanedTasks } from '../../shared/sandbox/lifecycle.ts';

const logger = handlerLogger('sandbox-reaper');

export async function handler() {
  const config = sandboxConfigFromEnv(process.env);
  if (!config) throw new Error('SANDBOX_CLUSTER_ARN is not set');
  const deps = { db: clients.db(), tableName: requireEnv('TABLE_NAME'), ecs: clients.ecs(), config };
  const stopped = await reapIdleSandboxes(deps);
  if (stopped.length) logger.info('idle sandboxes stopped', { threads: stopped });
  const orphans = await sweepOrphanedTasks(deps);
  if (orphans.length) logger.warn('orphaned sandbox tasks stopped', { tasks: orphans });
  return { stopped: stopped.length, orphans: orphans.length };
}
