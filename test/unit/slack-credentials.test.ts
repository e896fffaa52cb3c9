import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { secretCredentials, type CredentialSource } from '../../shared/platforms/secret-credentials.ts';
import { slackDescriptor, type SlackCredentials } from '../../shared/platforms/slack/descriptor.ts';
import { startLocalSecretsManager, type LocalSecret, type LocalSecretsManager } from '../../packages/local-cloud/src/secrets-manager.ts';
import { LOCAL_CREDENTIALS } from '../support/dynamo.ts';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf';
const REREAD_MS = 10_000;
/** The Slack app's credentials as the functions read them (shared/handler-context/chat.ts). */
const slackCredentials = (source: CredentialSource<SlackCredentials>, client: () => SecretsManagerClient, now?: () => number) =>
  secretCredentials(source, client, slackDescriptor.secret.parse, now);
const secret = (botToken: string, signingSecret = 'signing-1') => JSON.stringify({ signingSecret, botToken });

let secrets: LocalSecretsManager;
let slack: LocalSecret;
let client: SecretsManagerClient;
before(async () => {
  secrets = await startLocalSecretsManager([{ arn: ARN, name: 'slack', value: undefined }]);
  slack = secrets.secret(ARN)!;
  client = new SecretsManagerClient({ endpoint: secrets.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
});
after(async () => {
  client.destroy();
  await secrets.close();
});

test('slack credentials: a read is reused for maxAge, then a rotated secret is picked up', async () => {
  slack.value = secret('xoxb-1');
  const reads = secrets.reads;
  const credentials = slackCredentials({ secretArn: ARN, maxAgeSeconds: 1, rereadSeconds: 10 }, () => client);
  assert.deepEqual(await credentials.current(), { signingSecret: 'signing-1', botToken: 'xoxb-1' });
  slack.value = secret('xoxb-2');
  assert.equal((await credentials.current()).botToken, 'xoxb-1', 'within maxAge: the cached read');
  assert.equal(secrets.reads, reads + 1);
  await sleep(1100);
  assert.equal((await credentials.current()).botToken, 'xoxb-2', 'after maxAge: the rotated secret');
});

test('slack credentials: a re-read (after a failed signature) reads now, at most once per interval', async () => {
  slack.value = secret('xoxb-1', 'random-at-deploy');
  let clock = 1_000_000;
  const credentials = slackCredentials(
    { secretArn: ARN, maxAgeSeconds: 60, rereadSeconds: 10 },
    () => client,
    () => clock,
  );
  assert.equal((await credentials.current()).signingSecret, 'random-at-deploy');
  slack.value = secret('xoxb-1', 'the-apps-signing-secret');
  assert.equal((await credentials.current()).signingSecret, 'random-at-deploy', 'the cached read, within maxAge');
  const reads = secrets.reads;
  assert.equal(await credentials.reread(), true, 'the secret changed');
  assert.equal(secrets.reads, reads + 1);
  assert.equal((await credentials.current()).signingSecret, 'the-apps-signing-secret', 'the re-read replaces the cached read');
  clock += REREAD_MS - 1;
  slack.value = secret('xoxb-1', 'rotated-again');
  assert.equal(await credentials.reread(), false, 'within the interval: no read');
  assert.equal(secrets.reads, reads + 1);
  clock += 1;
  assert.equal(await credentials.reread(), true, 'after the interval: read again');
  clock += REREAD_MS;
  assert.equal(await credentials.reread(), false, 'read, but unchanged');
  assert.equal(secrets.reads, reads + 3);
});

test('slack credentials: a failed read is not kept, and a malformed secret says what it must be', async () => {
  slack.value = undefined;
  const credentials = slackCredentials({ secretArn: ARN, maxAgeSeconds: 60, rereadSeconds: 10 }, () => client);
  await assert.rejects(credentials.current(), (error: Error) => (error.cause as Error).name === 'ResourceNotFoundException');
  slack.value = '{"botToken": "xoxb-3"}';
  await assert.rejects(credentials.current(), /must be JSON \{"signingSecret": "...", "botToken": "xoxb-..."\}/);
  slack.value = secret('xoxb-3');
  const rotated = slackCredentials({ secretArn: ARN, maxAgeSeconds: 60, rereadSeconds: 10 }, () => client);
  assert.equal((await rotated.current()).botToken, 'xoxb-3');
});

test('slack credentials: given ones are used as they are, and never re-read', async () => {
  const given = { signingSecret: 's', botToken: 'xoxb-local' };
  const credentials = slackCredentials({ credentials: given }, () => client);
  assert.equal(await credentials.current(), given);
  assert.equal(await credentials.reread(), false);
});
