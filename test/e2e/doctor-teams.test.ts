// `npm run doctor` against a Teams-only deployment (chatPlatforms teams): no Slack outputs and no
// Slack checks; the Teams secret as the deploy left it, with a wrong app password, and right; the
// Teams webhook; and an alarm topic nobody is subscribed to (no alarmEmail).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { runDoctor, type DoctorDeps } from '../../scripts/doctor/checks.ts';
import { startTestStack, TEAMS_APP_ID, TEAMS_APP_PASSWORD, TEAMS_TENANT_ID, type TestStack } from '../support/local-stack.ts';
import { byCheck, doctorDeps, problems } from '../support/doctor.ts';

let stack: TestStack;
let deps: DoctorDeps & { destroy(): void };
before(async () => {
  stack = await startTestStack({ chatPlatforms: ['teams'] });
  // The sandbox round trip is the Slack file's; here it would only take time.
  deps = { ...doctorDeps(stack), sandbox: { run: false, timeoutMs: 0, pollMs: 0 } };
});
after(async () => {
  deps?.destroy();
  await stack?.stop();
});

const putSecret = (value: object) =>
  deps.secrets.send(new PutSecretValueCommand({ SecretId: stack.cloud.names.teamsSecretArn, SecretString: JSON.stringify(value) }));
const doctor = () => (stack.bedrock.script({ text: 'H' }), runDoctor(deps));

test('doctor, Teams only: no Slack checks; the Teams secret and webhook pass; nobody receives the alarms', async () => {
  assert.equal(stack.cloud.names.slackSecretArn, undefined);
  const results = await doctor();
  const checks = results.map((r) => r.check);
  assert.ok(!checks.some((c) => c.startsWith('slack')), checks.join(', '));
  const found = byCheck(results);
  assert.equal(found['teams secret']!.status, 'ok', found['teams secret']!.detail);
  assert.match(found['teams secret']!.detail, new RegExp(`app ${TEAMS_APP_ID} gets Bot Framework tokens`));
  assert.match(found['teams webhook']!.detail, /\/api\/messages answers \(401 to an unsigned request/);
  assert.equal(found.sandbox!.status, 'skipped');
  // No alarmEmail: the alarms notify a topic nobody reads.
  assert.deepEqual(problems(results), ['alarm email']);
  assert.match(found['alarm email']!.detail, /nobody is subscribed to the alarm topic/);
  assert.match(found['alarm email']!.fix!, /-c alarmEmail=.*aws sns subscribe --topic-arn \S+ --protocol email/);
});

test('doctor, Teams only: the secret as the deploy left it, then a password Microsoft refuses', async () => {
  try {
    await putSecret({ appId: 'replace-me', appPassword: 'GeneratedAtDeploy0123456789abcdef', tenantId: 'replace-me' });
    let secret = byCheck(await doctor())['teams secret']!;
    assert.equal(secret.status, 'problem');
    assert.match(secret.detail, /appId and tenantId still the placeholder replace-me/);
    assert.match(secret.fix!, /aws secretsmanager put-secret-value --secret-id \S+ --secret-string '\{"appId"/);

    await putSecret({ appId: TEAMS_APP_ID, appPassword: 'an-expired-client-secret', tenantId: TEAMS_TENANT_ID });
    secret = byCheck(await doctor())['teams secret']!;
    assert.equal(secret.status, 'problem');
    assert.match(secret.detail, /get no token: .*refused the app's credentials \(401\).*invalid_client/);
    assert.doesNotMatch(`${secret.detail} ${secret.fix}`, /an-expired-client-secret/);
    assert.match(secret.fix!, /client secret's value/);
  } finally {
    await putSecret({ appId: TEAMS_APP_ID, appPassword: TEAMS_APP_PASSWORD, tenantId: TEAMS_TENANT_ID });
  }
  assert.equal(byCheck(await doctor())['teams secret']!.status, 'ok');
});

test('doctor, Teams only: a Teams webhook that fails says where its log is', async () => {
  // The function fails before it answers, as a crash at start would.
  stack.cloud.injectFault({ role: 'teamsWebhook', when: 'before', errorName: 'Runtime.ImportModuleError' });
  const webhook = byCheck(await doctor())['teams webhook']!;
  assert.equal(webhook.status, 'problem');
  assert.match(webhook.detail, /\/api\/messages answered 500 to an unsigned request, not 401/);
  assert.match(webhook.fix!, /TeamsWebhook function log group/);
});
