import type { ActorDeps } from '../actor.ts';
import { dbClient } from '../aws/dynamodb.ts';
import { sfnClient } from '../aws/sfn.ts';
import type { ControlDeps } from '../control.ts';
import type { JsonLogger } from '../log.ts';
import { executionStarter } from '../runs.ts';
import { isPaused } from '../pause.ts';

export function actorFromEnv(logger: JsonLogger, env: { TABLE_NAME: string; STATE_MACHINE_ARN: string }): ActorDeps {
  const table = { db: dbClient(), tableName: env.TABLE_NAME };
  return { ...table, startRun: executionStarter(sfnClient(), env.STATE_MACHINE_ARN, logger), paused: () => isPaused(table) };
}

export function controlFromEnv(logger: JsonLogger, env: { TABLE_NAME: string; STATE_MACHINE_ARN: string }): ControlDeps {
  return { actor: actorFromEnv(logger, env), sfn: sfnClient(), stateMachineArn: env.STATE_MACHINE_ARN, logger };
}
