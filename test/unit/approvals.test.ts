// Approvals below the state machine: which rules hold a call, the record's first-decision-wins
// writes on a real DynamoDB Local, failing closed when the approval message cannot be posted, and who
// may decide. The whole path (Slack and Teams clicks, the wait, ops) is test/e2e/approvals.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { Thread } from 'chat';
import type { RunInput } from '../../shared/contracts.ts';
import { approvalRuleFor, approvalRuleSchema, resolveApprovalRules } from '../../shared/approvals/rules.ts';
import { awaitApproval, gateCall, ApprovalNotWaiting } from '../../shared/approvals/gate.ts';
import { addReason, awaitReason, decideApproval, getApproval, pendingReasonOf, setTaskToken } from '../../shared/approvals/record.ts';
import { decideAsPerson } from '../../shared/approvals/decide.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { SECRET_PATTERNS } from '../../shared/policy/secret-filter.ts';
import { tableForFile } from '../support/dynamo.ts';
import { promptFor } from '../support/prompts.ts';

const table = tableForFile();
const threadId = 'slack:C42:1700000000.000100';
const run = (runId: string, author = 'U0ASKER'): RunInput => {
  const prompt = promptFor(threadId, '1700000000.000100');
  return { runId, threadId, prompt: { ...prompt, author: { userId: author, userName: author } } };
};
const logger = createLogger({ level: 'silent' });
const rule = (setting: Record<string, unknown>) => approvalRuleSchema.parse(setting);
const bash = (command: string, toolUseId = 'tu-1') => ({ toolUseId, name: 'bash', input: { command } });

test('rules: tool globs, match over the input as JSON, approvers resolved to adapter:id, channel rules added to the deployment’s', () => {
  const access = { admins: ['slack:U0ADMIN'] };
  const rules = resolveApprovalRules(
    [rule({ tool: 'bash', match: '\\brm\\b', approvers: 'admins' }), rule({ tool: 'orders__*', approvers: ['U0123', 'teams:29:x'] })],
    [rule({ tool: 'search_?hannel', approvers: 'requester', timeoutMinutes: 0.5 })],
    access,
    run('run-rules'),
  );
  assert.deepEqual(
    rules.map((r) => [r.tool, r.approvers, r.timeoutMinutes]),
    [
      ['bash', ['slack:U0ADMIN'], 60],
      ['orders__*', ['slack:U0123', 'teams:29:x'], 60],
      ['search_?hannel', ['slack:U0ASKER'], 0.5],
    ],
  );
  assert.equal(approvalRuleFor(rules, bash('rm -rf build'))?.tool, 'bash');
  assert.equal(approvalRuleFor(rules, bash('ls -la')), undefined, 'match decides');
  assert.equal(approvalRuleFor(rules, { name: 'orders__refund', input: {} })?.tool, 'orders__*');
  assert.equal(approvalRuleFor(rules, { name: 'orders_refund', input: {} }), undefined, 'the glob is the whole name');
  assert.equal(approvalRuleFor(rules, { name: 'search_channel', input: {} })?.approversSetting, 'requester');
  // An event's run: the person whose run wrote the event, else the admins.
  const event = { ...run('run-event'), prompt: { ...run('run-event').prompt, author: { userId: 'event', userName: 'event x' } } };
  assert.deepEqual(resolveApprovalRules([rule({ tool: 'bash', approvers: 'requester' })], undefined, access, event)[0]!.approvers, [
    'slack:U0ADMIN',
  ]);
  // A pattern the bounded engine refuses is refused in settings.json.
  assert.equal(approvalRuleSchema.safeParse({ tool: 'bash', match: '(a+)+$', approvers: 'admins' }).success, false);
  assert.equal(approvalRuleSchema.safeParse({ tool: 'bash', approvers: 'everyone' }).success, false);
});

test('a held call gets one record and waits; the first decision wins (a click against the timeout), and the run reads it', async () => {
  const deps = { approvals: table(), logger, now: () => 1_000_000 };
  const rules = resolveApprovalRules(
    [rule({ tool: 'bash', approvers: 'admins' })],
    undefined,
    { admins: ['slack:U0ADMIN'] },
    run('run-wins'),
  );
  const call = bash('curl https://example.invalid');
  const first = await gateCall(deps, run('run-wins'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.equal(first.kind, 'wait');
  assert.deepEqual(first.kind === 'wait' && first.loop.approval, { id: 'run-wins#tu-1', timeoutSeconds: 3600 });
  // A retried step finds the same record.
  const again = await gateCall(
    { ...deps, now: () => 1_000_000 + 60_000 },
    run('run-wins'),
    { step: 1, next: 'tool' },
    call,
    rules,
    SECRET_PATTERNS,
  );
  assert.deepEqual(again.kind === 'wait' && again.loop.approval, { id: 'run-wins#tu-1', timeoutSeconds: 3540 });
  // A wait never outlasts the run's own time limit (maxRunMinutes): the deadline is set when the record is made.
  const bounded = await gateCall(deps, run('run-bounded'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS, 1_000_000 + 90_000);
  assert.deepEqual(bounded.kind === 'wait' && bounded.loop.approval, { id: 'run-bounded#tu-1', timeoutSeconds: 90 });

  const approved = await decideApproval(table(), 'run-wins#tu-1', { state: 'approved', by: 'slack:U0ADMIN', at: 1_000_001 });
  const late = await decideApproval(table(), 'run-wins#tu-1', { state: 'timed_out', by: 'timeout', at: 1_000_002 });
  assert.equal(approved.decided, true);
  assert.equal(late.decided, false);
  assert.equal(late.record?.state, 'approved');
  const gate = await gateCall(deps, run('run-wins'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.equal(gate.kind, 'approved');
  // The same call id with another input is not what was approved.
  const changed = await gateCall(
    deps,
    run('run-wins'),
    { step: 1, next: 'tool' },
    bash('curl https://elsewhere.invalid'),
    rules,
    SECRET_PATTERNS,
  );
  assert.equal(changed.kind, 'refused');
});

test('past its deadline the run times the call out; a person cannot decide after the deadline', async () => {
  const rules = resolveApprovalRules(
    [rule({ tool: 'bash', approvers: 'admins', timeoutMinutes: 1 })],
    undefined,
    { admins: ['slack:U0ADMIN'] },
    run('run-late'),
  );
  const call = bash('rm x');
  await gateCall({ approvals: table(), logger, now: () => 0 }, run('run-late'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  const late = await decideApproval(table(), 'run-late#tu-1', { state: 'approved', by: 'slack:U0ADMIN', at: 61_000 });
  assert.equal(late.decided, false, 'the deadline passed');
  const gate = await gateCall(
    { approvals: table(), logger, now: () => 61_000 },
    run('run-late'),
    { step: 1, next: 'tool' },
    call,
    rules,
    SECRET_PATTERNS,
  );
  assert.equal(gate.kind, 'refused');
  assert.match(gate.kind === 'refused' ? gate.outcome.text : '', /nobody decided within the time allowed/);
  assert.equal((await getApproval(table(), 'run-late#tu-1'))?.decidedBy, 'timeout');
});

test('fail closed: an approval message that cannot be posted denies the call, and the model is told why', async () => {
  const rules = resolveApprovalRules([rule({ tool: 'bash', approvers: 'admins' })], undefined, { admins: [] }, run('run-closed'));
  const call = bash('rm -rf /');
  const deps = { approvals: table(), logger, now: () => 5_000 };
  const gate = await gateCall(deps, run('run-closed'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.equal(gate.kind, 'wait');
  const thread = { post: () => Promise.reject(new Error('channel_not_found')) } as unknown as Thread;
  const loop = gate.kind === 'wait' ? gate.loop : undefined;
  await assert.rejects(
    awaitApproval({ ...deps, ledger: table(), thread: () => thread }, run('run-closed'), loop, 'token-1'),
    (error: Error) => error instanceof ApprovalNotWaiting && error.name === 'ApprovalNotWaiting',
  );
  const record = await getApproval(table(), 'run-closed#tu-1');
  assert.equal(record?.state, 'denied');
  assert.equal(record?.decidedBy, 'system');
  const after = await gateCall(deps, run('run-closed'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.equal(after.kind, 'refused');
  assert.match(after.kind === 'refused' ? after.outcome.text : '', /could not be posted in the thread/);
});

test('only an approver decides; an operator may decide any; a decision before the wait began needs no token', async () => {
  const rules = resolveApprovalRules([rule({ tool: 'bash', approvers: ['U0LISTED'] })], undefined, { admins: [] }, run('run-who'));
  await gateCall(
    { approvals: table(), logger, now: () => 0 },
    run('run-who'),
    { step: 1, next: 'tool' },
    bash('rm a'),
    rules,
    SECRET_PATTERNS,
  );
  const sfn = { send: () => Promise.reject(new Error('no token: SendTaskSuccess must not be called')) } as unknown as SFNClient;
  const deps = { approvals: table(), sfn, logger, now: () => 1 };
  const stranger = await decideAsPerson(deps, { id: 'run-who#tu-1', decision: 'approved', by: 'slack:U0ASKER', byName: 'asker' });
  assert.equal(stranger.kind, 'not-approver', 'the requester is not a listed approver');
  assert.equal((await getApproval(table(), 'run-who#tu-1'))?.state, 'waiting');
  const listed = await decideAsPerson(deps, {
    id: 'run-who#tu-1',
    decision: 'denied',
    by: 'slack:U0LISTED',
    byName: 'listed',
    reason: 'x'.repeat(900),
  });
  assert.equal(listed.kind, 'decided');
  assert.equal(listed.kind === 'decided' && listed.record.reason?.length, 500, 'the reason is clamped');
  const operator = await decideAsPerson(deps, {
    id: 'run-who#tu-1',
    decision: 'approved',
    by: 'ops:operator',
    byName: 'an operator',
    operator: true,
  });
  assert.equal(operator.kind, 'already');
  assert.equal(
    (await decideAsPerson(deps, { id: 'run-none#tu-1', decision: 'approved', by: 'ops:operator', byName: 'op', operator: true })).kind,
    'unknown',
  );
});

test('a Deny from the chat waits for its reason: the run waits until the window ends; only the denier gives it, once; after the window there is none', async () => {
  const rules = resolveApprovalRules(
    [rule({ tool: 'bash', approvers: 'admins' })],
    undefined,
    { admins: ['slack:U0ADMIN'] },
    run('run-why'),
  );
  const call = bash('rm -rf build');
  const at = (now: number) => ({ approvals: table(), logger, now: () => now });
  await gateCall(at(1_000), run('run-why'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  const id = 'run-why#tu-1';
  await decideApproval(table(), id, { state: 'denied', by: 'slack:U0ADMIN', at: 2_000, reasonUntil: 62_000 });
  const waits = await gateCall(at(2_500), run('run-why'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.deepEqual(waits.kind === 'wait' && waits.loop.approval, { id, timeoutSeconds: 60 });
  assert.ok(await setTaskToken(table(), id, 'token-2', 2_600), 'the run may wait again for the reason');
  assert.equal(await pendingReasonOf(table(), threadId, 'slack:U0ADMIN'), undefined, 'nothing pending until the click records it');
  await awaitReason(table(), (await getApproval(table(), id))!);
  assert.equal(await pendingReasonOf(table(), threadId, 'slack:U0ADMIN'), id);
  assert.equal(await addReason(table(), id, 'slack:U0OTHER', 'mine', 3_000), undefined, 'not the denier');
  assert.equal((await addReason(table(), id, 'slack:U0ADMIN', 'not today', 3_000))?.taskToken, 'token-2');
  assert.equal(await addReason(table(), id, 'slack:U0ADMIN', 'changed my mind', 3_100), undefined, 'once');
  const refused = await gateCall(at(3_200), run('run-why'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.match(refused.kind === 'refused' ? refused.outcome.text : '', /denied this bash call\. Their reason: not today$/);

  // No reply within the window: the call is refused without a reason, and no reason is taken after it.
  await gateCall(at(1_000), run('run-silent'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  await decideApproval(table(), 'run-silent#tu-1', { state: 'denied', by: 'slack:U0ADMIN', at: 2_000, reasonUntil: 62_000 });
  assert.equal(await addReason(table(), 'run-silent#tu-1', 'slack:U0ADMIN', 'late', 62_001), undefined);
  assert.equal(await setTaskToken(table(), 'run-silent#tu-1', 'token-3', 62_001), undefined, 'no more waiting');
  const silent = await gateCall(at(62_001), run('run-silent'), { step: 1, next: 'tool' }, call, rules, SECRET_PATTERNS);
  assert.match(silent.kind === 'refused' ? silent.outcome.text : '', /They gave no reason\.$/);
});
