// The CDK app: one AgentRuntimeStack, checked against cdk-nag's AwsSolutions rules on every synth.
// Settings come from CDK context (cdk.json, or `cdk deploy -c modelId=... -c logRetentionDays=90`);
// an unknown key or a bad value stops the synth with one line. Each synth also prints what the
// stack costs while idle (infra/idle-cost.ts); `npm run synth` prints it after the template instead.
import { App } from 'aws-cdk-lib';
import { estimateIdleCost, formatIdleCost, IDLE_COST_AFTER_SYNTH } from './idle-cost.ts';
import { checkWithCdkNag } from './nag.ts';
import { ContextError, readSettings } from './settings.ts';
import { DEFAULT_STACK_NAME } from './stack-names.ts';
import { AgentRuntimeStack } from './stack.ts';

const app = new App();
try {
  const stackName: unknown = app.node.tryGetContext('stackName') ?? DEFAULT_STACK_NAME;
  if (typeof stackName !== 'string') throw new ContextError('context stackName must be a string');
  const stack = new AgentRuntimeStack(app, stackName, {
    description: 'Threadwork: a chat-native AI agent runtime (Slack -> API Gateway -> SQS FIFO -> Step Functions -> Bedrock)',
    settings: readSettings(app.node),
  });
  checkWithCdkNag(app);

  const assembly = app.synth();
  // On stderr: the CLI shows it, and stdout stays the template `cdk synth` prints.
  if (!process.env[IDLE_COST_AFTER_SYNTH]) {
    process.stderr.write(`${formatIdleCost(stackName, estimateIdleCost(assembly.getStackByName(stack.stackName).template))}\n`);
  }
} catch (error) {
  if (!(error instanceof ContextError)) throw error;
  console.error(error.message);
  process.exit(1);
}
