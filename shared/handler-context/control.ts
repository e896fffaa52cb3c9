import type { ActorDeps } from '../run/actor.ts';
import { dbClient } from '../aws/dynamodb.ts';
import { sfnClient } from '../aws/sfn.ts';
import type { ControlDeps } from '../run/control.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { executionStarter } from '../run/runs.ts';
import { isPaused } from '../policy/pause.ts';

type ActorEnv = { TABLE_NAME: string; STATE_MACHINE_ARN: string };

/** `metrics`: where a run that starts is counted (RunsStarted, QueueWait). */
export function actorFromEnv(logger: JsonLogger, env: ActorEnv, metrics?: MetricsSink): ActorDeps {
  const table = { db: dbClient(), tableName: env.TABLE_NAME };
  return { ...table, startRun: executionStarter(sfnClient(), env.STATE_MACHINE_ARN, logger, metrics), paused: () => isPaused(table) };
}

export function controlFromEnv(logger: JsonLogger, env: ActorEnv, metrics?: MetricsSink): ControlDeps {
  return { actor: actorFromEnv(logger, env, metrics), sfn: sfnClient(), stateMachineArn: env.STATE_MACHINE_ARN, logger };
}
