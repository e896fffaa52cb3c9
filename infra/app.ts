// The CDK app: one AgentRuntimeStack, checked against cdk-nag's AwsSolutions rules on every synth.
// Settings come from CDK context (cdk.json, or `cdk deploy -c modelId=... -c logRetentionDays=90`).
// Each synth also prints what the synthesized stack costs while idle (infra/idle-cost.ts).
import { App } from 'aws-cdk-lib';
import { estimateIdleCost, formatIdleCost } from './idle-cost.ts';
import { checkWithCdkNag } from './nag.ts';
import { readSettings } from './settings.ts';
import { DEFAULT_STACK_NAME } from './stack-names.ts';
import { AgentRuntimeStack } from './stack.ts';

const app = new App();
const stackName: unknown = app.node.tryGetContext('stackName') ?? DEFAULT_STACK_NAME;
if (typeof stackName !== 'string') throw new Error('context stackName must be a string');

const stack = new AgentRuntimeStack(app, stackName, {
  description: 'Threadwork: a chat-native AI agent runtime (Slack -> API Gateway -> SQS FIFO -> Step Functions -> Bedrock)',
  settings: readSettings(app.node),
});
checkWithCdkNag(app);

const assembly = app.synth();
// On stderr: the CLI shows it, and stdout stays the template `cdk synth` prints.
process.stderr.write(`${formatIdleCost(stackName, estimateIdleCost(assembly.getStackByName(stack.stackName).template))}\n`);
