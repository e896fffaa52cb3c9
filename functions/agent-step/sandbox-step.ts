// A sandbox tool call (bash, read, write, edit), as the state machine's SandboxTool state calls it.
// Runs inside the VPC beside the sandbox tasks; reaches only DynamoDB and S3 (gateway endpoints).
import { clients, requireEnv } from '../../shared/aws.ts';
import { handlerLogger, handoffFromEnv, sandboxPortFromEnv } from '../../shared/handler-context.ts';
import { countStep } from '../../shared/steps/run-control.ts';
import { sandboxToolStep, type SandboxStepDeps } from '../../shared/steps/sandbox-tool.ts';
import { stepEventSchema } from '../../shared/schemas.ts';

const logger = handlerLogger('sandbox-step');
let deps: SandboxStepDeps | undefined;

export async function handler(event: unknown) {
  const parsed = stepEventSchema.safeParse(event);
  if (!parsed.success || parsed.data.action !== 'tool') {
    const detail = parsed.success
      ? `action ${parsed.data.action} is not a sandbox step`
      : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw Object.assign(new Error(`Invalid sandbox step event: ${detail}`), { name: 'InvalidStepEvent' });
  }
  deps ??= {
    store: { s3: clients.s3(), bucket: requireEnv('DATA_BUCKET') },
    sandboxes: { db: clients.db(), tableName: requireEnv('TABLE_NAME') },
    actor: { db: clients.db(), tableName: requireEnv('TABLE_NAME') },
    port: sandboxPortFromEnv(process.env),
    logger,
    now: Date.now,
  };
  const { loop, error: _error, ...run } = parsed.data.state;
  return countStep(loop, await sandboxToolStep(deps, run, loop ?? { step: 0, next: 'sandbox' }), handoffFromEnv(process.env));
}
