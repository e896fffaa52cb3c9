// The names derived from the stack name: each fits its AWS limit, the synth fails with the limit when
// the stack name is too long, and the template uses exactly these names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { App } from 'aws-cdk-lib';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { checkStackName, DERIVED_NAMES, derivedName, stackNameLimit } from '../../infra/stack-names.ts';
import { AgentRuntimeStack } from '../../infra/stack.ts';
import { STACK_NAME, synth } from './synth.ts';

test('the tightest limit is the scheduler function name: 64 characters, so at most 54 for the stack name', () => {
  const { maxLength, by } = stackNameLimit();
  assert.equal(maxLength, 54);
  assert.equal(by, DERIVED_NAMES.schedulerFunction);
  const longest = `A${'b'.repeat(53)}`;
  checkStackName(longest);
  for (const [key, name] of Object.entries(DERIVED_NAMES)) {
    assert.ok(name.of(longest).length <= name.maxLength, key);
  }
});

test('a stack name that is too long or has other characters fails the synth, naming the limit', () => {
  assert.throws(
    () => checkStackName(`A${'b'.repeat(54)}`),
    /stackName "Ab+" is 55 characters; it can have at most 54, because the scheduler Lambda function name \("Ab+-Scheduler"\) is limited to 64 characters/,
  );
  for (const bad of ['', '1Threadwork', 'Thread_work', 'Thread work', 'Threadwork/prod']) {
    assert.throws(() => checkStackName(bad), /stackName must start with a letter and contain only letters, digits and hyphens/, bad);
  }
  // The stack checks its own name before building anything.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  assert.throws(() => new AgentRuntimeStack(app, 'X'.repeat(55), { settings: DEFAULT_SETTINGS }), /at most 54/);
});

test('the template names things exactly as DERIVED_NAMES says', () => {
  const { template } = synth();
  const resources = Object.values(template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>);
  const named = (type: string, property: string) => resources.filter((r) => r.Type === type).map((r) => r.Properties[property]);
  assert.ok(named('AWS::Lambda::Function', 'FunctionName').includes(derivedName('schedulerFunction', STACK_NAME)));
  assert.deepEqual(named('AWS::Scheduler::ScheduleGroup', 'Name'), [derivedName('scheduleGroup', STACK_NAME)]);
  assert.deepEqual(named('AWS::Events::EventBus', 'Name'), [derivedName('eventBus', STACK_NAME)]);
  assert.deepEqual(named('AWS::StepFunctions::StateMachine', 'StateMachineName'), [derivedName('stateMachine', STACK_NAME)]);
  assert.ok(named('AWS::Logs::LogGroup', 'LogGroupName').includes(derivedName('stateMachineLogGroup', STACK_NAME)));
  assert.deepEqual(named('AWS::SecretsManager::Secret', 'Name'), [
    derivedName('slackSecret', STACK_NAME),
    derivedName('teamsSecret', STACK_NAME),
  ]);
});
