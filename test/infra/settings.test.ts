// Deployment settings read from CDK context, and how a model id maps to Bedrock resources.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { App } from 'aws-cdk-lib';
import { parseModelId } from '../../infra/constructs/bedrock-access.ts';
import { DEFAULT_SETTINGS, readSettings } from '../../infra/settings.ts';

const settingsFrom = (context: Record<string, unknown>) => readSettings(new App({ context }).node);

test('defaults when the context says nothing', () => {
  assert.deepEqual(settingsFrom({}), {
    modelId: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
    logRetentionDays: 30,
    runTimeoutMinutes: 60,
  });
  assert.deepEqual(settingsFrom({}), DEFAULT_SETTINGS);
});

test('numbers given as strings (cdk deploy -c key=value) are parsed', () => {
  const settings = settingsFrom({ modelId: 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0', logRetentionDays: '90', runTimeoutMinutes: '15' });
  assert.equal(settings.modelId, 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0');
  assert.equal(settings.logRetentionDays, 90);
  assert.equal(settings.runTimeoutMinutes, 15);
});

test('invalid values fail the synth with a message naming the setting', () => {
  assert.throws(() => settingsFrom({ logRetentionDays: 31 }), /logRetentionDays must be one of 1, 3, 5/);
  assert.throws(() => settingsFrom({ logRetentionDays: 'a month' }), /logRetentionDays/);
  assert.throws(() => settingsFrom({ runTimeoutMinutes: 0 }), /runTimeoutMinutes/);
  assert.throws(() => settingsFrom({ runTimeoutMinutes: '1.5' }), /runTimeoutMinutes/);
  assert.throws(() => settingsFrom({ modelId: '' }), /modelId/);
  assert.throws(() => settingsFrom({ modelId: 'model/../../x' }), /modelId/);
});

test('model ids: cross-Region inference profiles and plain foundation models', () => {
  assert.deepEqual(parseModelId('global.anthropic.claude-sonnet-4-5-20250929-v1:0'), {
    profileScope: 'global',
    foundationModelId: 'anthropic.claude-sonnet-4-5-20250929-v1:0',
  });
  for (const scope of ['us', 'eu', 'apac', 'us-gov', 'jp', 'au']) {
    assert.equal(parseModelId(`${scope}.anthropic.claude-x-v1:0`).profileScope, scope);
    assert.equal(parseModelId(`${scope}.anthropic.claude-x-v1:0`).foundationModelId, 'anthropic.claude-x-v1:0');
  }
  assert.deepEqual(parseModelId('anthropic.claude-3-5-haiku-20241022-v1:0'), {
    foundationModelId: 'anthropic.claude-3-5-haiku-20241022-v1:0',
  });
});
