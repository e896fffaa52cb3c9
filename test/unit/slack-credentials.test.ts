import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { slackCredentials } from '../../shared/slack-credentials.ts';
import { LOCAL_CREDENTIALS } from '../support/dynamo.ts';
import { startSecretsManager, type SecretsStandIn } from '../support/secrets-manager.ts';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf';
const secret = (botToken: string) => JSON.stringify({ signingSecret: 'signing-1', botToken });

let secrets: SecretsStandIn;
let client: SecretsManagerClient;
before(async () => {
  secrets = await startSecretsManager();
  client = new SecretsManagerClient({ endpoint: secrets.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
});
after(async () => {
  client.destroy();
  await secrets.close();
});

test('slack credentials: a read is reused for maxAge, then a rotated secret is picked up', async () => {
  secrets.value = secret('xoxb-1');
  const reads = secrets.reads;
  const current = slackCredentials({ secretArn: ARN, maxAgeSeconds: 1 }, () => client);
  assert.deepEqual(await current(), { signingSecret: 'signing-1', botToken: 'xoxb-1' });
  secrets.value = secret('xoxb-2');
  assert.equal((await current()).botToken, 'xoxb-1', 'within maxAge: the cached read');
  assert.equal(secrets.reads, reads + 1);
  await sleep(1100);
  assert.equal((await current()).botToken, 'xoxb-2', 'after maxAge: the rotated secret');
});

test('slack credentials: a failed read is not kept, and a malformed secret says what it must be', async () => {
  secrets.value = undefined;
  const current = slackCredentials({ secretArn: ARN, maxAgeSeconds: 60 }, () => client);
  await assert.rejects(current(), (error: Error) => (error.cause as Error).name === 'ResourceNotFoundException');
  secrets.value = '{"botToken": "xoxb-3"}';
  await assert.rejects(current(), /must be JSON \{"signingSecret": "...", "botToken": "xoxb-..."\}/);
  secrets.value = secret('xoxb-3');
  const rotated = slackCredentials({ secretArn: ARN, maxAgeSeconds: 60 }, () => client);
  assert.equal((await rotated()).botToken, 'xoxb-3');
});

test('slack credentials: the local cloud passes them as they are', async () => {
  const given = { signingSecret: 's', botToken: 'xoxb-local' };
  assert.equal(await slackCredentials({ credentials: given }, () => client)(), given);
});
