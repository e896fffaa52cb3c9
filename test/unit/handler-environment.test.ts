// The environment contract between a construct and its handler is checked by the typecheck: the
// `@ts-expect-error` lines below are what `tsc` must refuse (it fails if one of them is accepted).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentEnv, dispatchEnv, handlerEnvironment, readEnv, sandboxLaunchEnv, type EnvironmentFor } from '../../shared/env.ts';

const dispatch = { TABLE_NAME: 'table', STATE_MACHINE_ARN: 'arn:aws:states:::stateMachine:run', DATA_BUCKET: 'data' };

test('an environment with the variables its handler reads is the environment it reads', () => {
  const environment = handlerEnvironment(dispatchEnv, { ...dispatch, SLACK_SIGNING_SECRET: 's', SLACK_BOT_TOKEN: 't' });
  assert.equal(readEnv(dispatchEnv, environment).DATA_BUCKET, 'data');
});

test('a variable renamed on one side, missing, or not read by the handler fails the typecheck', () => {
  const { DATA_BUCKET, ...withoutBucket } = dispatch;
  // @ts-expect-error DATA_BUCKET renamed in the construct only
  handlerEnvironment(dispatchEnv, { ...withoutBucket, DATA_BUCKETS: DATA_BUCKET });
  // @ts-expect-error DATA_BUCKET, which dispatch cannot do without, is not set
  handlerEnvironment(dispatchEnv, withoutBucket);
  // @ts-expect-error the scheduler's variable given to dispatch, whose handler does not read it
  handlerEnvironment(dispatchEnv, { ...dispatch, SCHEDULE_GROUP_NAME: 'events' });
  // A typed part spread in is checked too: the sandbox launch variables are the agent's.
  const launch: EnvironmentFor<typeof sandboxLaunchEnv> = { SANDBOX_CLUSTER_ARN: 'arn:aws:ecs:::cluster/sandbox', SANDBOX_PORT: '8080' };
  handlerEnvironment(agentEnv, { ...dispatch, ...launch });
  // @ts-expect-error dispatch starts no sandboxes
  handlerEnvironment(dispatchEnv, { ...dispatch, ...launch });
});
