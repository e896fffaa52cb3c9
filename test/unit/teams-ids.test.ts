// Teams thread ids in the data tree: every thread of a Teams channel shares the channel's scope
// (settings key, memory, skills), as Slack threads do; group and personal chats are their own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeThreadId, encodeThreadId, isDM } from '@chat-adapter/teams';
import { ConsoleLogger } from 'chat';
import { channelKeyOf, dataKeys, opensThread, parseThreadId } from '../../shared/ids.ts';
import { TeamsConnectorAdapter } from '../../shared/platforms/teams/connector.ts';
import { decodeTeamsThreadId, encodeTeamsThreadId } from '../../shared/platforms/teams/thread-id.ts';

const serviceUrl = 'https://smba.trafficmanager.net/amer/a1b2c3d4-e5f6-7890-abcd-ef1234567890/';
const channel = '19:d441d38c655c47a085215b2726e76927@thread.tacv2';
const threadOf = (rootId: string) =>
  encodeThreadId({ conversationId: `${channel};messageid=${rootId}`, serviceUrl, conversationType: 'channel' });

test('two threads of one Teams channel share its channel key and channel directory, not their thread directories', () => {
  const [a, b] = [threadOf('1767224924615'), threadOf('1767224937245')];
  assert.equal(channelKeyOf(a), `teams:${channel}`);
  assert.equal(channelKeyOf(b), channelKeyOf(a));
  assert.equal(dataKeys(a).channelDir, dataKeys(b).channelDir);
  assert.notEqual(dataKeys(a).threadDir, dataKeys(b).threadDir);
  assert.match(dataKeys(a).channelDir, /^teams\/19%3Ad441d38c655c47a085215b2726e76927%40thread\.tacv2$/);
});

test('a group chat and a personal chat are each their own channel', () => {
  const group = encodeThreadId({ conversationId: '19:abc@thread.v2', serviceUrl, conversationType: 'groupChat' });
  const personal = encodeThreadId({ conversationId: 'a:1xyz', serviceUrl, conversationType: 'personal' });
  assert.equal(parseThreadId(group).channel, '19:abc@thread.v2');
  assert.equal(parseThreadId(personal).channel, 'a:1xyz');
  assert.equal(parseThreadId(personal).adapter, 'teams');
});

test("which message opens its thread: a Teams channel thread's root post, a Slack thread's first message; never a chat's message", () => {
  // The recorded mention and its follow-up (test/fixtures/chat-sdk-replay/teams.json).
  const thread = threadOf('1767224924615');
  assert.equal(opensThread(thread, '1767224924615'), true);
  assert.equal(opensThread(thread, '1767224937245'), false);
  const group = encodeThreadId({ conversationId: '19:abc@thread.v2', serviceUrl, conversationType: 'groupChat' });
  assert.equal(opensThread(group, '1767224924615'), false);
  assert.equal(opensThread('slack:C123:1234.5678', '1234.5678'), true);
  assert.equal(opensThread('slack:C123:1234.5678', '1234.9999'), false);
  assert.equal(opensThread('not a thread id', '1'), false);
});

test('Slack thread ids are unchanged', () => {
  assert.deepEqual(parseThreadId('slack:C123:1234.5678'), { adapter: 'slack', channel: 'C123', thread: '1234.5678' });
  assert.equal(channelKeyOf('slack:C123:1234.5678'), 'slack:C123');
});

test("the functions' own Teams thread id codec writes and reads the ids the Chat SDK Teams adapter does", () => {
  const cases = [
    { conversationId: `${channel};messageid=1767224924615`, serviceUrl, conversationType: 'channel' as const },
    { conversationId: channel, serviceUrl, conversationType: 'channel' as const },
    { conversationId: '19:abc@thread.v2', serviceUrl, conversationType: 'groupChat' as const },
    { conversationId: 'a:1xyz', serviceUrl, conversationType: 'personal' as const },
    { conversationId: '19:abc@thread.v2', serviceUrl, conversationType: 'personal' as const },
    { conversationId: 'a:1xyz', serviceUrl },
  ];
  for (const ids of cases) {
    const theirs = encodeThreadId(ids);
    assert.equal(encodeTeamsThreadId(ids), theirs);
    assert.deepEqual(decodeTeamsThreadId(theirs), decodeThreadId(theirs));
    assert.equal(
      new TeamsConnectorAdapter({
        appId: 'app',
        tokens: async () => 't',
        logger: new ConsoleLogger('error'),
        serviceUrls: { reference: async () => undefined, connectorOrigins: [] },
      }).isDM(theirs),
      isDM(theirs),
    );
  }
  assert.throws(() => decodeTeamsThreadId('teams:a:b:sideways'), /Invalid Teams conversation type/);
  assert.throws(() => decodeTeamsThreadId('slack:C1:1.2'), /Invalid Teams thread ID/);
});
