// Every minute: stop the sandboxes nobody used for SANDBOX_IDLE_MINUTES. Their files are in S3.
import { clients, requireEnv } from '../../shared/aws.ts';
import { handlerLogger, sandboxConfigFromEnv } from '../../shared/handler-context.ts';
import { reapIdleSandboxes } from '../../shared/sandbox/lifecycle.ts';

const logger = handlerLogger('sandbox-reaper');

export async function handler() {
  const config = sandboxConfigFromEnv(process.env);
  if (!config) throw new Error('SANDBOX_CLUSTER_ARN is not set');
  const stopped = await reapIdleSandboxes({ db: clients.db(), tableName: requireEnv('TABLE_NAME'), ecs: clients.ecs(), config });
  if (stopped.length) logger.info('idle sandboxes stopped', { threads: stopped });
  return { stopped: stopped.length };
}
