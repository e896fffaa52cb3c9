// A sandbox tool call (bash, read, write, edit, a stdio MCP server's tool), as the state machine's
// SandboxTool state calls it; also the listing of a run's stdio MCP servers, which run in the sandbox.
// Runs inside the VPC beside the sandbox tasks; reaches only DynamoDB and S3 (gateway endpoints).
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { readEnv, sandboxStepEnv } from '../../shared/env.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { countStep } from '../../shared/run/steps/run-control.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { sandboxToolStep } from '../../shared/run/steps/sandbox-tool.ts';
import { recentByRun, recentSnapshots } from '../../shared/run/steps/snapshot.ts';
import type { McpListing } from '../../shared/reach/mcp-tools.ts';
import { stepEventSchema } from '../../shared/contracts.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { parseOrThrow } from '../../shared/support/validation.ts';
import { SANDBOX_STEP_TIMEOUT_SECONDS } from '../../shared/tools/timeouts.ts';
import type { Context } from 'aws-lambda';

const logger = handlerLogger('sandbox-step');
const metrics = handlerMetrics();
const init = lazy(() => {
  const env = readEnv(sandboxStepEnv);
  const table = { db: dbClient(), tableName: env.TABLE_NAME };
  return {
    deps: {
      store: { s3: s3Client(), bucket: env.DATA_BUCKET },
      snapshots: recentSnapshots(),
      sandboxes: table,
      actor: table,
      port: env.SANDBOX_PORT,
      tools: BUILTIN_TOOLS,
      listings: recentByRun<McpListing>(),
      now: Date.now,
      metrics,
    },
    handoffAfterSteps: env.HANDOFF_AFTER_STEPS,
  };
});

export async function handler(event: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>) {
  const deadline = Date.now() + (context?.getRemainingTimeInMillis() ?? SANDBOX_STEP_TIMEOUT_SECONDS * 1000);
  const step = parseOrThrow(stepEventSchema, event, 'Invalid sandbox step event', 'InvalidStepEvent');
  if (step.action !== 'tool') {
    throw Object.assign(new Error(`Invalid sandbox step event: action ${step.action} is not a sandbox step`), { name: 'InvalidStepEvent' });
  }
  const { deps, handoffAfterSteps } = await init();
  const { loop, error: _error, ...run } = step.state;
  const log = logger.with({ runId: run.runId, threadId: run.threadId });
  return publishingMetrics(metrics, async () =>
    countStep(
      loop,
      await sandboxToolStep({ ...deps, logger: log, deadline }, run, loop ?? { step: 0, next: 'sandbox' }),
      handoffAfterSteps,
    ),
  );
}
