// What `npm run doctor` checks of a deployed stack, in order, each as one line: ok, or the problem
// and what to do about it. Checks that need an earlier one's answer are skipped without it.
import { readAgentFunction } from './agent-function.ts';
import { chatChecks } from './chat.ts';
import type { DoctorDeps } from './deps.ts';
import { agentRole, modelCall } from './model.ts';
import { alarmSubscription, alarms, functionErrors } from './monitoring.ts';
import { bedrockQuotas, fargateVcpus, lambdaConcurrency } from './quotas.ts';
import { problem, skipped, withOutputs, withoutOutputs, type CheckResult } from './result.ts';
import { sandboxImage, sandboxRoundTrip } from './sandbox.ts';
import { settingsFile } from './settings.ts';
import type { Settings } from '../../shared/settings/schema.ts';
import { credentials, stack } from './stack.ts';

export type { CheckResult } from './result.ts';
export type { DoctorDeps } from './deps.ts';

/** The checks after the stack's, by name, in the order they print. */
const AFTER_STACK = [
  'settings.json',
  'chat',
  'agent role',
  'bedrock',
  'bedrock quotas',
  'sandbox image',
  'sandbox',
  'fargate quota',
  'lambda concurrency',
  'alarms',
  'function errors',
  'alarm email',
];

export async function runDoctor(deps: DoctorDeps): Promise<CheckResult[]> {
  const first = await credentials(deps);
  if (first.status !== 'ok') return [first, ...['stack', ...AFTER_STACK].map((c) => skipped(c, 'needs credentials'))];
  const found = await stack(deps);
  if (!found.outputs) return [first, found.result, ...AFTER_STACK.map((c) => skipped(c, 'needs the stack'))];
  const outputs = found.outputs;

  // Read first: the capacity checks hold the account's quotas to its limits.
  const settingsRead = outputs.DataBucketName ? await settingsFile(deps, outputs.DataBucketName) : undefined;
  const settings = settingsRead?.result ?? withoutOutputs('settings.json', ['DataBucketName']);
  const chat = chatChecks(deps, outputs);
  const noChat = problem(
    'chat',
    'the stack has no Slack or Teams outputs',
    'Deploy this version with a chat platform (`-c chatPlatforms=slack,teams`, or one of them).',
  );
  const agent = outputs.AgentStepFunctionName ? readAgentFunction(deps, outputs.AgentStepFunctionName) : undefined;
  const needsAgent = (check: string, run: (read: Awaited<ReturnType<typeof readAgentFunction>>) => Promise<CheckResult>) =>
    withOutputs(check, outputs, ['AgentStepFunctionName'], async () => run(await agent!));
  const needsSettings = (check: string, run: (s: Settings) => Promise<CheckResult>) =>
    settingsRead ? run(settingsRead.settings) : Promise.resolve(skipped(check, 'needs settings.json (the DataBucketName output)'));

  const rest = await Promise.all([
    ...(chat.length > 0 ? chat : [Promise.resolve(noChat)]),
    withOutputs('agent role', outputs, ['ModelId'], ({ ModelId }) => needsAgent('agent role', (read) => agentRole(deps, ModelId, read))),
    withOutputs('bedrock', outputs, ['ModelId'], ({ ModelId }) => modelCall(deps, ModelId)),
    withOutputs('bedrock quotas', outputs, ['ModelId'], ({ ModelId }) => bedrockQuotas(deps, ModelId)),
    withOutputs('sandbox image', outputs, ['SandboxImageUri'], ({ SandboxImageUri }) => sandboxImage(deps, SandboxImageUri)),
    needsAgent('sandbox', (read) => sandboxRoundTrip(deps, read)),
    needsSettings('fargate quota', (s) => needsAgent('fargate quota', (read) => fargateVcpus(deps, s, read))),
    needsSettings('lambda concurrency', (s) => lambdaConcurrency(deps, s)),
    withOutputs('alarms', outputs, ['AlarmTopicArn'], ({ AlarmTopicArn }) => alarms(deps, AlarmTopicArn)),
    functionErrors(deps),
    withOutputs('alarm email', outputs, ['AlarmTopicArn'], ({ AlarmTopicArn }) => alarmSubscription(deps, AlarmTopicArn)),
  ]);
  return [first, found.result, settings, ...rest];
}

/** One line per check: `ok`, `problem` (with what to do) or `skipped`. */
export function formatReport(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.check.length));
  return results
    .map(
      (r) =>
        `${r.status.padEnd(8)}${r.check.padEnd(width + 2)}${r.detail}${r.fix ? `\n${' '.repeat(width + 10)}what to do: ${r.fix}` : ''}`,
    )
    .join('\n');
}
