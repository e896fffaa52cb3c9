// The reach step, as the state machine's ReachTool and Connect states call it: web_fetch and MCP tool
// calls, and the listing of a run's MCP tools. The only function that reaches the Internet and HTTP MCP
// servers (stdio ones run in the sandbox: sandbox-step), and the only one that may read the MCP secrets (`<stack>/mcp/*`).
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { secretsClient } from '../../shared/aws/secrets.ts';
import { readEnv, reachStepEnv } from '../../shared/env.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import type { McpListing } from '../../shared/reach/mcp-tools.ts';
import { connectStep, reachToolStep } from '../../shared/run/steps/reach.ts';
import { countStep } from '../../shared/run/steps/run-control.ts';
import { recentByRun, recentSnapshots } from '../../shared/run/steps/snapshot.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { stepEventSchema } from '../../shared/contracts.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { parseOrThrow } from '../../shared/support/validation.ts';

/** A secret read is reused this long: a rotated token is picked up within it. */
const SECRET_MAX_AGE_SECONDS = 300;

const logger = handlerLogger('reach-step');
const metrics = handlerMetrics();
const init = lazy(() => {
  const env = readEnv(reachStepEnv);
  const table = { db: dbClient(), tableName: env.TABLE_NAME };
  const secrets = new SecretsProvider({ awsSdkV3Client: secretsClient() });
  return {
    deps: {
      store: { s3: s3Client(), bucket: env.DATA_BUCKET },
      snapshots: recentSnapshots(),
      listings: recentByRun<McpListing>(),
      actor: table,
      tools: BUILTIN_TOOLS,
      readSecret: async (name: string) => {
        const value = await secrets.get(`${env.MCP_SECRET_PREFIX}${name}`, { maxAge: SECRET_MAX_AGE_SECONDS });
        if (typeof value !== 'string') throw Object.assign(new Error(`secret ${name} has no string value`), { name: 'SecretNotText' });
        return value;
      },
      allowLoopback: env.REACH_ALLOW_LOOPBACK === 'true',
      sandboxNetwork: env.SANDBOX_NETWORK,
      now: Date.now,
      metrics,
    },
    handoffAfterSteps: env.HANDOFF_AFTER_STEPS,
  };
});

export async function handler(event: unknown) {
  const step = parseOrThrow(stepEventSchema, event, 'Invalid reach step event', 'InvalidStepEvent');
  if (step.action !== 'tool' && step.action !== 'connect') {
    throw Object.assign(new Error(`Invalid reach step event: action ${step.action} is not a reach step`), { name: 'InvalidStepEvent' });
  }
  const { deps, handoffAfterSteps } = await init();
  const { loop, error: _error, ...run } = step.state;
  const log = logger.with({ runId: run.runId, threadId: run.threadId });
  const at = loop ?? { step: 0, next: step.action === 'connect' ? ('connect' as const) : ('reach' as const) };
  const work = step.action === 'connect' ? connectStep : reachToolStep;
  return publishingMetrics(metrics, async () => countStep(loop, await work({ ...deps, logger: log }, run, at), handoffAfterSteps));
}
