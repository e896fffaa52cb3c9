import { readFileSync } from 'node:fs';
// settings.json `access`: who may use the agent, who may stop or steer a run, and what an unreadable
// access block means; and what identifies a replayed slash command or button press.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  accessSchema,
  controlPolicy,
  controlRefusal,
  workspaceOf,
  useRefusal,
  type Access,
  type Person,
} from '../../shared/policy/access.ts';
import { replayKey } from '../../shared/commands/webhook.ts';
import { mayInterrupt } from '../../shared/admission/gates/queue.ts';
import { personOf } from '../../shared/admission/person.ts';
import { promptFor } from '../support/prompts.ts';
import { loadSettings } from '../../shared/settings/load.ts';

const access = (block: Record<string, unknown>): Access => accessSchema.parse(block);
const person = (userId: string, workspace = 'T1'): Person => ({ adapter: 'slack', userId, workspace });

test('empty lists let everyone in, everywhere', () => {
  assert.equal(useRefusal(access({}), person('U1'), 'slack:C1'), undefined);
  assert.equal(useRefusal(access({}), undefined, 'slack:C1'), undefined);
});

test('each list refuses who and where it does not name, with the reason; admins are always let in', () => {
  const a = access({
    workspaces: ['slack:T1'],
    channels: ['slack:C1'],
    users: ['slack:U1', 'slack:U2'],
    admins: ['slack:U9'],
  });
  assert.equal(useRefusal(a, person('U1'), 'slack:C1'), undefined);
  assert.equal(useRefusal(a, person('U3'), 'slack:C1'), 'user');
  assert.equal(useRefusal(a, person('U1'), 'slack:C2'), 'channel');
  assert.equal(useRefusal(a, person('U1', 'T2'), 'slack:C1'), 'workspace');
  assert.equal(useRefusal(a, { adapter: 'slack', userId: 'U1' }, 'slack:C1'), 'workspace', 'an unknown workspace is not a listed one');
  assert.equal(useRefusal(a, person('U9', 'T7'), 'slack:C5'), undefined, 'an admin anywhere, from any workspace');
  // Ids are qualified by adapter: the same id on another platform is someone else.
  assert.equal(useRefusal(a, { adapter: 'teams', userId: 'U1', workspace: 'T1' }, 'teams:C1'), 'workspace');
  assert.equal(useRefusal(access({ users: ['slack:U1'] }), { adapter: 'teams', userId: 'U1' }, 'teams:C1'), 'user');
  // An event's prompt has no person: only the channel counts.
  assert.equal(useRefusal(a, undefined, 'slack:C1'), undefined);
  assert.equal(useRefusal(a, undefined, 'slack:C2'), 'channel');
});

test('ids must be qualified by adapter, and the lists are bounded', () => {
  assert.equal(accessSchema.safeParse({ users: ['U1'] }).success, false);
  assert.equal(accessSchema.safeParse({ channels: ['slack:C1 '] }).success, false);
  assert.equal(accessSchema.safeParse({ control: 'owner' }).success, false);
  assert.equal(accessSchema.safeParse({ admins: Array.from({ length: 51 }, (_, i) => `slack:U${i}`) }).success, false);
  assert.deepEqual(accessSchema.parse({}), { workspaces: [], channels: [], users: [], admins: [], control: 'anyone' });
});

test('control: anyone allowed by default; with control "requester" only the requester and admins', () => {
  assert.equal(controlPolicy(access({})), undefined, 'nothing to record: anyone in the thread may');
  const anyone = controlPolicy(access({ users: ['slack:U1', 'slack:U2'], admins: ['slack:U9'] }));
  assert.equal(controlRefusal(anyone, 'U1', person('U2')), undefined);
  assert.equal(controlRefusal(anyone, 'U1', person('U3')), 'not-allowed');
  assert.equal(controlRefusal(anyone, 'U1', person('U9')), undefined);
  const requester = controlPolicy(access({ control: 'requester', admins: ['slack:U9'] }));
  assert.deepEqual(requester, { requesterOnly: true, admins: ['slack:U9'], users: [], workspaces: [] });
  assert.equal(controlRefusal(requester, 'U1', person('U1')), undefined);
  assert.equal(controlRefusal(requester, 'U1', person('U2')), 'not-requester');
  assert.equal(controlRefusal(requester, 'U1', person('U9')), undefined, 'an admin stops any run');
  assert.equal(controlRefusal(requester, 'event', person('U2')), 'not-requester', "an event's run: admins only");
  // In a channel left out, only admins start runs: only they (and the requester) may control them.
  const closed = controlPolicy(access({ channels: ['slack:C1'], admins: ['slack:U9'] }), 'slack:C2');
  assert.equal(controlRefusal(closed, 'U9', person('U2')), 'not-requester');
  assert.equal(controlRefusal(closed, 'U9', person('U9')), undefined);
  assert.equal(controlPolicy(access({ channels: ['slack:C1'] }), 'slack:C1'), undefined, 'an open channel: anyone');
  const workspaces = controlPolicy(access({ workspaces: ['slack:T1'] }));
  assert.equal(controlRefusal(workspaces, 'U1', person('U2', 'T1')), undefined);
  assert.equal(controlRefusal(workspaces, 'U1', person('U2', 'T2')), 'not-allowed');
});

test("the workspace of a message, a button press and a slash command is the sender's, as its platform says", () => {
  assert.equal(workspaceOf('slack', { team: 'T1', team_id: 'T0' }), 'T1', "a message's author team (shared channels)");
  assert.equal(workspaceOf('slack', { user: { id: 'U1', team_id: 'T2' }, team: { id: 'T0' } }), 'T2', 'block_actions');
  assert.equal(workspaceOf('slack', { team_id: 'T3', user_id: 'U1' }), 'T3', 'a slash command');
  // Teams: the tenant of the recorded channel mention (test/fixtures/chat-sdk-replay/teams.json).
  const teams = JSON.parse(readFileSync(new URL('../fixtures/chat-sdk-replay/teams.json', import.meta.url), 'utf8')) as {
    mention: unknown;
  };
  assert.equal(workspaceOf('teams', teams.mention), 'a1b2c3d4-e5f6-7890-abcd-ef1234567890', 'a Teams activity');
  assert.equal(workspaceOf('teams', { conversation: { tenantId: 'tenant-2' } }), 'tenant-2');
  // Each platform reads only its own fields: a Slack team in a Teams activity, or a tenant in a Slack payload, is no workspace.
  assert.equal(workspaceOf('teams', { team: 'T1', team_id: 'T0' }), undefined);
  assert.equal(workspaceOf('slack', { conversation: { tenantId: 'tenant-2' } }), undefined);
  assert.equal(workspaceOf('discord', { team: 'T1' }), undefined, 'a platform this runtime does not know');
  assert.equal(workspaceOf('slack', {}), undefined);
  assert.equal(workspaceOf('slack', null), undefined);
});

const s3With = (raw: string | undefined) =>
  ({
    send: async () => {
      if (raw === undefined) throw Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
      return { Body: { transformToString: async () => raw } };
    },
  }) as unknown as S3Client;
const loaded = (raw: string | undefined) => loadSettings({ s3: s3With(raw), bucket: 'b' });

test('an access block that cannot be read lets nobody in; the rest of an invalid file falls back to the defaults as before', async () => {
  assert.equal((await loaded(undefined)).settings.access.locked, undefined);
  assert.equal((await loaded('{}')).settings.access.locked, undefined);
  const notJson = await loaded('{"access": {');
  assert.equal(notJson.settings.access.locked, true);
  assert.match(notJson.problems.join('\n'), /nobody may use the agent/);
  const badAccess = await loaded(JSON.stringify({ access: { users: ['U1'] } }));
  assert.equal(badAccess.settings.access.locked, true);
  assert.match(badAccess.problems.join('\n'), /access\.users\.0/);
  // Another field is wrong: the defaults stand in for it, but the valid allow-list still applies.
  const otherField = await loaded(JSON.stringify({ maxModelSteps: -1, access: { users: ['slack:U1'] } }));
  assert.equal(otherField.settings.maxModelSteps, 40);
  assert.deepEqual(otherField.settings.access.users, ['slack:U1']);
  assert.equal(otherField.settings.access.locked, undefined);
  assert.equal(useRefusal(LOCKED(), person('U1'), 'slack:C1'), 'locked');
  assert.equal(useRefusal(LOCKED(), undefined, 'slack:C1'), 'locked');
});
const LOCKED = () => ({ ...accessSchema.parse({ admins: ['slack:U1'] }), locked: true });

test('a replayed slash command or button press has the key of the first delivery; another one does not', () => {
  const slash = { team_id: 'T1', user_id: 'U1', command: '/stop', trigger_id: '111.222.abc' };
  assert.equal(replayKey('slack', 'slash', slash.trigger_id, slash), 'dedupe:slack:slash:111.222.abc');
  assert.notEqual(replayKey('slack', 'slash', '111.222.abd', slash), replayKey('slack', 'slash', slash.trigger_id, slash));
  const press = { trigger_id: '9.9.x', actions: [{ action_id: 'stop-run', action_ts: '1767326130.289415' }] };
  assert.equal(replayKey('slack', 'action', press.trigger_id, press, 'stop-run'), 'dedupe:slack:action:9.9.x:stop-run:1767326130.289415');
  // Without a trigger id, the same payload (a replay) has the same key, a different one another.
  assert.equal(replayKey('slack', 'slash', undefined, slash), replayKey('slack', 'slash', undefined, { ...slash }));
  assert.notEqual(replayKey('slack', 'slash', undefined, slash), replayKey('slack', 'slash', undefined, { ...slash, text: 'x' }));
});

test('interrupt mode: a new prompt stops the running run only when its author could stop it by hand', () => {
  const policy = controlPolicy(access({ control: 'requester', admins: ['slack:U9'] }));
  const prompt = (userId: string) => ({ ...promptFor('slack:C1:1.0001', `m-${userId}`), author: { userId, userName: userId } });
  const from = (userId: string) => personOf(prompt(userId));
  const running = {
    threadId: 'slack:C1:1.0001',
    status: 'running',
    version: 1,
    current: { runId: 'r1', threadId: 'slack:C1:1.0001', prompt: prompt('U1') },
  } as const;
  assert.equal(mayInterrupt(policy, running, from('U1')), true, 'its requester');
  assert.equal(mayInterrupt(policy, running, from('U9')), true, 'an admin');
  assert.equal(mayInterrupt(policy, running, from('U2')), false, 'someone else waits their turn');
  assert.equal(
    mayInterrupt(policy, running, personOf({ ...prompt('x'), author: { userId: 'event', userName: 'event x' } })),
    false,
    'an event waits too',
  );
  assert.equal(mayInterrupt(undefined, running, from('U2')), true, 'without a policy, as before');
  assert.equal(mayInterrupt(policy, undefined, from('U2')), true, 'nothing running');
});
