// The rule for where the bot's Bot Framework token may go (shared/platforms/teams/service-url.ts), against
// conversation references stored in DynamoDB Local exactly as the Teams webhook stores them from
// verified activities: a thread's serviceUrl must be its conversation's stored one; a conversation
// with none may only be reached on Microsoft's Bot Connector origins (or the configured ones).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEnv, schedulerEnv } from '../../shared/env.ts';
import { rememberTeamsConversation, teamsConversation } from '../../shared/platforms/teams/conversations.ts';
import { BOT_CONNECTOR_ORIGINS } from '../../shared/platforms/teams/endpoints.ts';
import { attachmentUrlProblem, sameServiceUrl, serviceUrlProblem, type ServiceUrlTrust } from '../../shared/platforms/teams/service-url.ts';
import { encodeTeamsThreadId, type TeamsThreadId } from '../../shared/platforms/teams/thread-id.ts';
import { tableForFile } from '../support/dynamo.ts';

const table = tableForFile();
const trust = (connectorOrigins: readonly string[] = BOT_CONNECTOR_ORIGINS): ServiceUrlTrust => ({
  reference: (channelId) => teamsConversation(table(), channelId),
  connectorOrigins,
});
const thread = (conversationId: string, serviceUrl: string, conversationType?: TeamsThreadId['conversationType']) =>
  encodeTeamsThreadId({ conversationId, serviceUrl, ...(conversationType ? { conversationType } : {}) });

const AMER = 'https://smba.trafficmanager.net/amer/';
const ATTACKER = 'http://127.0.0.1:9/';

test('every thread of a channel may be answered at the serviceUrl a verified activity of the channel named, and nowhere else', async () => {
  const channel = '19:stored-channel@thread.tacv2';
  // What the webhook records for a mention in a channel thread.
  await rememberTeamsConversation(table(), thread(`${channel};messageid=1700000000001`, AMER));
  for (const conversationId of [`${channel};messageid=1700000000001`, `${channel};messageid=1700000000002`, channel]) {
    assert.equal(await serviceUrlProblem(trust(), thread(conversationId, AMER)), undefined, conversationId);
  }
  // The same endpoint, written differently.
  assert.equal(await serviceUrlProblem(trust(), thread(channel, 'https://SMBA.trafficmanager.net/amer')), undefined);
  // An attacker's server, and even another of Microsoft's regions: not this conversation's.
  for (const serviceUrl of [ATTACKER, 'https://attacker.example/', 'https://smba.trafficmanager.net/emea/']) {
    const problem = await serviceUrlProblem(trust(), thread(`${channel};messageid=1`, serviceUrl));
    assert.match(
      problem ?? '',
      /is not the one Teams gave for this conversation \(19:stored-channel@thread\.tacv2, at https:\/\/smba/,
      serviceUrl,
    );
  }
});

test('a personal or group chat is its own conversation: its stored serviceUrl, not another chat’s', async () => {
  await rememberTeamsConversation(table(), thread('a:personal-1', AMER));
  await rememberTeamsConversation(table(), thread('19:group-1@thread.v2', 'https://smba.trafficmanager.net/emea/'));
  assert.equal(await serviceUrlProblem(trust(), thread('a:personal-1', AMER)), undefined);
  assert.equal(await serviceUrlProblem(trust(), thread('19:group-1@thread.v2', 'https://smba.trafficmanager.net/emea/')), undefined);
  assert.ok(await serviceUrlProblem(trust(), thread('a:personal-1', ATTACKER, 'personal')));
  assert.ok(await serviceUrlProblem(trust(), thread('19:group-1@thread.v2', AMER)));
});

test('a conversation no verified activity has named may be reached only on a Bot Connector origin', async () => {
  const unknown = '19:never-seen@thread.tacv2';
  for (const serviceUrl of [
    'https://smba.trafficmanager.net/teams/',
    'https://smba.trafficmanager.net/amer/',
    'https://smba.infra.gcc.teams.microsoft.com/gcc',
    'https://smba.infra.gov.teams.microsoft.us/teams',
    'https://smba.infra.dod.teams.microsoft.us/dod',
    'https://msteams.botframework.azure.cn/',
  ]) {
    assert.equal(await serviceUrlProblem(trust(), thread(unknown, serviceUrl)), undefined, serviceUrl);
  }
  for (const serviceUrl of [
    ATTACKER,
    'http://smba.trafficmanager.net/amer/',
    'https://smba.trafficmanager.net.attacker.example/',
    'https://smba.trafficmanager.net@attacker.example/',
    'https://attacker.example/smba.trafficmanager.net/',
    'https://smba.trafficmanager.net:8443/amer/',
    'not a url',
  ]) {
    const problem = await serviceUrlProblem(trust(), thread(unknown, serviceUrl));
    assert.match(problem ?? '', /no activity from it has been received yet\) nor a Bot Connector service URL/, serviceUrl);
  }
  // The local cloud's stand-in is one only where configured as such.
  const standIn = 'http://127.0.0.1:3003/';
  assert.ok(await serviceUrlProblem(trust(), thread(unknown, standIn)));
  assert.equal(await serviceUrlProblem(trust(['http://127.0.0.1:3003']), thread(unknown, standIn)), undefined);
  assert.ok(await serviceUrlProblem(trust(['http://127.0.0.1:3003']), thread(unknown, 'https://smba.trafficmanager.net/amer/')));
});

test("a thread id naming another channel's conversation is checked against that conversation's reference", async () => {
  await rememberTeamsConversation(table(), thread('19:victim@thread.tacv2;messageid=5', AMER));
  // A suffix that does not end the id does not make it another conversation.
  assert.ok(await serviceUrlProblem(trust(), thread('19:victim@thread.tacv2;messageid=5;messageid=6', ATTACKER)));
  assert.ok(await serviceUrlProblem(trust(), thread('19:victim@thread.tacv2;messageid=x', ATTACKER)));
});

test('other platforms have no serviceUrl; a malformed Teams thread id is refused', async () => {
  assert.equal(await serviceUrlProblem(trust(), 'slack:C123:1700000000.000100'), undefined);
  assert.match((await serviceUrlProblem(trust(), 'teams:abc:def:sideways')) ?? '', /is not a thread id/);
});

test("a file is downloaded with the bot's token only from the trusted serviceUrl's own origin", async () => {
  const channel = '19:files@thread.tacv2';
  await rememberTeamsConversation(table(), thread(`${channel};messageid=1`, AMER));
  const own = thread(`${channel};messageid=1`, AMER);
  assert.equal(await attachmentUrlProblem(trust(), own, 'https://smba.trafficmanager.net/amer/v3/attachments/1/views/original'), undefined);
  assert.match(
    (await attachmentUrlProblem(trust(), own, 'http://127.0.0.1:9/v3/attachments/1/views/original')) ?? '',
    /not on this conversation's Bot Connector \(https:\/\/smba\.trafficmanager\.net\)/,
  );
  // A thread pointing elsewhere gets no download with the token, even of a file "on" its own serviceUrl.
  assert.ok(await attachmentUrlProblem(trust(), thread(`${channel};messageid=1`, ATTACKER), `${ATTACKER}v3/attachments/1/views/original`));
});

test('serviceUrls compare without case or trailing slashes', () => {
  assert.ok(sameServiceUrl('https://smba.trafficmanager.net/amer/', 'https://SMBA.trafficmanager.net/amer'));
  assert.ok(!sameServiceUrl('https://smba.trafficmanager.net/amer/', 'https://smba.trafficmanager.net/emea/'));
});

test('TEAMS_CONNECTOR_ORIGINS: Microsoft’s origins when unset; listed origins otherwise; anything else is an error', () => {
  const base = {
    TABLE_NAME: 't',
    DATA_BUCKET: 'b',
    INBOX_QUEUE_URL: 'q',
    TEAMS_APP_ID: 'app',
    TEAMS_APP_PASSWORD: 'pw',
    SCHEDULE_GROUP_NAME: 'g',
    SCHEDULER_ROLE_ARN: 'r',
    SCHEDULER_TARGET_ARN: 't',
    SCHEDULE_DLQ_ARN: 'd',
  };
  assert.deepEqual(readEnv(schedulerEnv, base).TEAMS_CONNECTOR_ORIGINS, BOT_CONNECTOR_ORIGINS);
  assert.deepEqual(
    readEnv(schedulerEnv, { ...base, TEAMS_CONNECTOR_ORIGINS: 'http://127.0.0.1:3003/, https://x.example/a' }).TEAMS_CONNECTOR_ORIGINS,
    ['http://127.0.0.1:3003', 'https://x.example'],
  );
  assert.throws(() => readEnv(schedulerEnv, { ...base, TEAMS_CONNECTOR_ORIGINS: 'smba.trafficmanager.net' }), /TEAMS_CONNECTOR_ORIGINS/);
});
