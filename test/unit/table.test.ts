// The state table's layout pinned to the keys deployments already hold: a builder whose output
// changed would leave every existing item of its kind unfound. Every export of shared/table.ts is
// listed here, so a new kind of item cannot be added without pinning its key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as table from '../../shared/table.ts';

const thread = 'slack:C0123:1700000000.000100';
const day = new Date('2026-11-24T23:59:59.999Z');

/** Each export with what it is or builds today, literally. */
const PINNED: Record<keyof typeof table, () => void> = {
  TABLE_KEYS: () => assert.deepEqual(table.TABLE_KEYS, { partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'expiresAt' }),
  actorKey: () => assert.deepEqual(table.actorKey(thread), { pk: 'actor#slack:C0123:1700000000.000100', sk: 'actor' }),
  admittedPromptKey: () =>
    assert.deepEqual(table.admittedPromptKey(thread, '1700000000.000200'), {
      pk: 'admitted#slack:C0123:1700000000.000100',
      sk: '1700000000.000200',
    }),
  WAITING_THREADS: () => assert.equal(table.WAITING_THREADS, 'actors#waiting'),
  waitingThreadKey: () => assert.deepEqual(table.waitingThreadKey(thread), { pk: 'actors#waiting', sk: thread }),
  recentThreadKey: () => assert.deepEqual(table.recentThreadKey('slack:C0123', 'U0456'), { pk: 'recent#slack:C0123', sk: 'U0456' }),
  ledgerKey: () => assert.deepEqual(table.ledgerKey('run-1', 'stop-card'), { pk: 'run#run-1', sk: 'stop-card' }),
  RUN_RECORD: () => {
    assert.equal(table.RUN_RECORD.reply(3), 'reply#3');
    assert.equal(table.RUN_RECORD.budgetRefused(0), 'budget-refused#0');
    assert.equal(table.RUN_RECORD.approvalMessage('tooluse_9'), 'approval-message#tooluse_9');
    assert.equal(table.RUN_RECORD.mcpConnectLink('orders'), 'mcp-connect#orders');
    const { reply: _reply, budgetRefused: _refused, approvalMessage: _approval, mcpConnectLink: _connect, ...fixed } = table.RUN_RECORD;
    assert.deepEqual(fixed, {
      stopCard: 'stop-card',
      costFooter: 'cost-footer',
      errorReply: 'error-reply',
      hookBlocked: 'hook-blocked',
      operatorStopNotice: 'operator-stop-notice',
      mcpUnavailable: 'mcp-unavailable',
      auditEnd: 'audit-end',
      runEndCounted: 'run-end-counted',
      childResult: 'child-result',
    });
  },
  subagentBatchKey: () => assert.deepEqual(table.subagentBatchKey('run-1', 'tooluse_1'), { pk: 'run#run-1', sk: 'subagents#tooluse_1' }),
  EVENTS_LEDGER: () => assert.deepEqual(table.ledgerKey(table.EVENTS_LEDGER, 'x'), { pk: 'run#events', sk: 'x' }),
  EVENT_RECORD: () => {
    assert.equal(table.EVENT_RECORD.channelPost('daily-report_2026-11-24T09_00'), 'channel-post#daily-report_2026-11-24T09_00');
    assert.equal(
      table.EVENT_RECORD.periodicNotice('events/slack/C0123/standup.json', '9b2cf535f27731c974343645a3985328'),
      'periodic-notice#events/slack/C0123/standup.json#9b2cf535f27731c974343645a3985328',
    );
  },
  eventFilesSavedKey: () => assert.deepEqual(table.eventFilesSavedKey('run-1'), { pk: 'run#run-1', sk: 'event-files-saved' }),
  APPROVALS: () => assert.equal(table.APPROVALS, 'approvals'),
  approvalKey: () => assert.deepEqual(table.approvalKey('run-1', 'tooluse_9'), { pk: 'approvals', sk: 'run-1#tooluse_9' }),
  pendingReasonKey: () => assert.deepEqual(table.pendingReasonKey(thread, 'slack:U1'), { pk: `reason#${thread}`, sk: 'slack:U1' }),
  deploymentRunsKey: () => assert.deepEqual(table.deploymentRunsKey, { pk: 'limits', sk: 'runs' }),
  channelRunsKeyOf: () => assert.deepEqual(table.channelRunsKeyOf('slack:C0123'), { pk: 'limits', sk: 'runs#slack:C0123' }),
  sandboxesKey: () => assert.deepEqual(table.sandboxesKey, { pk: 'limits', sk: 'sandboxes' }),
  SLOT_HOLDERS: () => assert.equal(table.SLOT_HOLDERS, 'limits#holders'),
  slotHolderKey: () => assert.deepEqual(table.slotHolderKey(thread), { pk: 'limits#holders', sk: thread }),
  SANDBOXES: () => assert.equal(table.SANDBOXES, 'sandboxes'),
  sandboxKey: () => assert.deepEqual(table.sandboxKey(thread), { pk: 'sandboxes', sk: thread }),
  workspaceVersionKey: () => assert.deepEqual(table.workspaceVersionKey('slack/C0123'), { pk: 'workspace#slack/C0123', sk: 'version' }),
  spendKey: () => {
    assert.deepEqual(table.spendKey('day', day, 'channel', 'slack:C0123'), { pk: 'spend#2026-11-24', sk: 'channel#slack:C0123#all' });
    assert.deepEqual(table.spendKey('month', day, 'deployment', '*', 'schedule'), { pk: 'spend#2026-11', sk: 'deployment#*#schedule' });
    // Days and months in UTC, zero-padded.
    assert.equal(table.spendKey('day', new Date('2027-01-05T00:00:00.000Z'), 'user', 'slack:U1').pk, 'spend#2027-01-05');
  },
  threadSpendKey: () => assert.deepEqual(table.threadSpendKey(thread), { pk: 'spend#thread', sk: thread }),
  spendPeriodOf: () => {
    assert.equal(table.spendPeriodOf({ pk: 'spend#2026-11-24', sk: 'x' }), 'day');
    assert.equal(table.spendPeriodOf({ pk: 'spend#2026-11', sk: 'x' }), 'month');
    assert.equal(table.spendPeriodOf({ pk: 'spend#thread', sk: thread }), 'thread');
  },
  pauseKey: () => assert.deepEqual(table.pauseKey, { pk: 'ops', sk: 'pause' }),
  eventExpiryKey: () =>
    assert.deepEqual(table.eventExpiryKey('events/slack/C0123/standup.json'), {
      pk: 'event-expiry',
      sk: 'events/slack/C0123/standup.json',
    }),
  eventThreadsPartition: () => assert.equal(table.eventThreadsPartition(thread), `event-threads#${thread}`),
  eventThreadKey: () =>
    assert.deepEqual(table.eventThreadKey(thread, 'events/slack/C0123/standup.json'), {
      pk: 'event-threads#slack:C0123:1700000000.000100',
      sk: 'events/slack/C0123/standup.json',
    }),
  periodicInForceKey: () =>
    assert.deepEqual(table.periodicInForceKey('events/slack/C0123/'), { pk: 'event-periodic', sk: 'events/slack/C0123/' }),
  triggerPartition: () => assert.equal(table.triggerPartition('prod-alarms'), 'trigger#prod-alarms'),
  uploadPartition: () => assert.equal(table.uploadPartition('slack', 'C0123'), 'upload#slack:C0123'),
  firingClaimKey: () =>
    assert.deepEqual(table.firingClaimKey('trigger#prod-alarms', '0123456789abcdef'), {
      pk: 'trigger#prod-alarms',
      sk: 'firing#0123456789abcdef',
    }),
  triggerWindowKey: () =>
    assert.deepEqual(table.triggerWindowKey('prod-alarms', '2026-11-24T10:00:00.000Z'), {
      pk: 'trigger#prod-alarms',
      sk: 'window#2026-11-24T10:00:00.000Z',
    }),
  oauthStateKey: () => assert.deepEqual(table.oauthStateKey('abc'), { pk: 'oauth-state#abc', sk: 'state' }),
  oauthTokensKey: () =>
    assert.deepEqual(table.oauthTokensKey('slack:U0ALICE', 'orders'), { pk: 'oauth-tokens#slack:U0ALICE', sk: 'orders' }),
  teamsConversationKey: () =>
    assert.deepEqual(table.teamsConversationKey('19:abc@thread.tacv2'), { pk: 'conversation#teams:19:abc@thread.tacv2', sk: 'reference' }),
  chatStateKey: () => {
    assert.deepEqual(table.chatStateKey('kv', 'dedupe:slack:1.2'), { pk: 'chat#kv#dedupe:slack:1.2', sk: 'kv' });
    assert.deepEqual(table.chatStateKey('lock', thread), { pk: `chat#lock#${thread}`, sk: 'lock' });
    assert.deepEqual(table.chatStateKey('sub', thread, 'bot-b'), { pk: `chat#bot-b#sub#${thread}`, sk: 'sub' });
  },
  CHAT_VALUE: () => {
    assert.equal(table.CHAT_VALUE.replayed('slack', 'slash', '123.456.abc'), 'dedupe:slack:slash:123.456.abc');
    assert.equal(table.CHAT_VALUE.accessRefusalTold(thread, 'U0456'), `access-refused:${thread}:U0456`);
    assert.equal(
      table.CHAT_VALUE.budgetRefusalTold(thread, { pk: 'spend#2026-11', sk: 'channel#slack:C0123#all' }),
      `budget-told:${thread}:spend#2026-11:channel#slack:C0123#all`,
    );
    assert.equal(table.CHAT_VALUE.teamsChannelContext('19:abc@thread.tacv2'), 'teams:channelContext:19:abc@thread.tacv2');
  },
};

for (const [name, check] of Object.entries(PINNED)) {
  test(`table layout: ${name} builds the keys deployments already hold`, check);
}

test('table layout: every export of shared/table.ts is pinned above', () => {
  assert.deepEqual(Object.keys(table).sort(), Object.keys(PINNED).sort());
});
