// The audit record: built from a run's context entries (its own only), its snapshot and how it
// ended; written once per run even when two end paths race or a retry comes after midnight.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EVENT_AUTHOR_ID } from '../../shared/policy/access.ts';
import {
  auditKey,
  auditRecord,
  executionRunEnd,
  failedRunEnd,
  finishedRunEnd,
  recordRunEnd,
  type AuditRecord,
} from '../../shared/observability/audit.ts';
import { dataKeys } from '../../shared/ids.ts';
import type { RunInput } from '../../shared/contracts.ts';
import type { ContextEntry } from '../../shared/context/store.ts';
import type { RunSnapshot } from '../../shared/run/steps/snapshot.ts';
import { appendToolResult, toolTime } from '../../shared/context/tool-calls.ts';
import { conditionalS3 } from '../support/conditional-s3.ts';
import { startTestTable, type TestTable } from '../support/dynamo.ts';
import { promptFor } from '../support/prompts.ts';

const threadId = 'slack:C42:1700000000.000100';
const SECRET_PROMPT = 'deploy with password hunter2';
const run = (overrides: Partial<RunInput['prompt']> = {}): RunInput => ({
  runId: 'run-audit-1',
  threadId,
  prompt: { ...promptFor(threadId, '1700000000.000100'), text: SECRET_PROMPT, postedAt: '2026-11-24T10:00:00.000Z', ...overrides },
});
const snapshot = {
  modelId: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
  startedAt: Date.parse('2026-11-24T10:00:02.000Z'),
  maxModelSteps: 5,
} as RunSnapshot;
const at = (s: number) => new Date(Date.parse('2026-11-24T10:00:00.000Z') + s * 1000).toISOString();

function twoToolRun(): ContextEntry[] {
  const entries: ContextEntry[] = [
    { role: 'user', content: [{ text: 'an older run' }], meta: { runId: 'run-older', at: at(-60) } },
    {
      role: 'assistant',
      content: [{ text: 'old' }],
      meta: { runId: 'run-older', at: at(-59), step: 0, usage: { inputTokens: 999, outputTokens: 999, costUsd: 9 } },
    },
    { role: 'user', content: [{ text: SECRET_PROMPT }], meta: { runId: 'run-audit-1', at: at(0), messageId: '1700000000.000100' } },
    {
      role: 'assistant',
      content: [
        { toolUse: { toolUseId: 't1', name: 'bash', input: { command: 'cat secret.txt' } } },
        { toolUse: { toolUseId: 't2', name: 'read_file', input: { path: 'missing' } } },
        { toolUse: { toolUseId: 't3', name: 'bash', input: { command: 'echo over the limit' } } },
      ],
      meta: {
        runId: 'run-audit-1',
        at: at(3),
        step: 0,
        usage: { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 50, cacheWriteInputTokens: 10, costUsd: 0.01 },
      },
    },
  ];
  const meta = { runId: 'run-audit-1', at: at(3), step: 0 };
  // The third call is refused by the per-turn limit: its result comes first, and it never ran.
  appendToolResult(entries, { toolUseId: 't3', name: 'bash', input: {} }, { status: 'error', text: 'not run' }, meta);
  appendToolResult(
    entries,
    { toolUseId: 't1', name: 'bash', input: {} },
    { status: 'success', text: 'hunter2' },
    meta,
    toolTime(Date.parse(at(4)), Date.parse(at(4)) + 1500),
  );
  appendToolResult(
    entries,
    { toolUseId: 't2', name: 'read_file', input: {} },
    { status: 'error', text: 'no such file' },
    meta,
    toolTime(Date.parse(at(6)), Date.parse(at(6)) + 40),
  );
  entries.push({
    role: 'assistant',
    content: [{ text: 'Done: the password is hunter2' }],
    meta: { runId: 'run-audit-1', at: at(8), step: 1, usage: { inputTokens: 200, outputTokens: 30, costUsd: 0.02 } },
  });
  return entries;
}

test('a finished run with tool calls: who, where, model, each call with its time and outcome, tokens, cost', () => {
  const record = auditRecord(run(), twoToolRun(), snapshot, { outcome: 'finished', reason: 'end_turn', endedAt: Date.parse(at(9)) });
  assert.deepEqual(record, {
    runId: 'run-audit-1',
    threadId,
    adapter: 'slack',
    channel: 'C42',
    requester: { userId: 'U1', userName: 'alice' },
    trigger: 'message',
    modelId: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
    askedAt: '2026-11-24T10:00:00.000Z',
    startedAt: '2026-11-24T10:00:02.000Z',
    endedAt: '2026-11-24T10:00:09.000Z',
    durationMs: 7000,
    outcome: 'finished',
    reason: 'end_turn',
    steps: 2,
    toolCalls: [
      { name: 'bash', startedAt: at(4), durationMs: 1500, outcome: 'ok' },
      { name: 'read_file', startedAt: at(6), durationMs: 40, outcome: 'error' },
      { name: 'bash', outcome: 'skipped' },
    ],
    tokens: { input: 300, output: 50, cacheRead: 50, cacheWrite: 10 },
    costUsd: 0.03,
  } satisfies AuditRecord);
});

test('the record never holds the prompt, tool inputs or outputs, or replies', () => {
  const json = JSON.stringify(auditRecord(run(), twoToolRun(), snapshot, { outcome: 'finished', reason: 'end_turn', endedAt: 1 }));
  for (const secret of ['hunter2', 'secret.txt', 'no such file', 'Done:', 'over the limit']) assert.doesNotMatch(json, new RegExp(secret));
});

test('a model without a price counts tokens only; a run that never prepared has no model and starts when asked', () => {
  const entries = twoToolRun().map((e) =>
    e.meta.usage ? { ...e, meta: { ...e.meta, usage: { ...e.meta.usage, costUsd: undefined } } } : e,
  );
  assert.equal('costUsd' in auditRecord(run(), entries, snapshot, { outcome: 'finished', reason: 'end_turn', endedAt: 0 }), false);
  const crashed = auditRecord(run(), [], undefined, { outcome: 'crashed', reason: 'States.Runtime', endedAt: Date.parse(at(1)) });
  assert.equal(crashed.modelId, undefined);
  assert.equal(crashed.startedAt, '2026-11-24T10:00:00.000Z');
  assert.equal(crashed.durationMs, 1000);
  assert.deepEqual(crashed.toolCalls, []);
  assert.equal(crashed.steps, 0);
});

test('a trigger run carries its trigger name, event id and object key; a schedule names its event file', () => {
  const triggered = run({
    author: { userId: EVENT_AUTHOR_ID, userName: 'event trigger uploads' },
    source: { trigger: 'uploads', eventId: 'evt-123', objectKey: 'incoming/report.csv' },
  });
  const record = auditRecord(triggered, [], snapshot, { outcome: 'finished', reason: 'end_turn', endedAt: 0 });
  assert.equal(record.trigger, 'trigger');
  assert.deepEqual(record.origin, { trigger: 'uploads', eventId: 'evt-123', objectKey: 'incoming/report.csv', event: 'trigger uploads' });
  const scheduled = run({ author: { userId: EVENT_AUTHOR_ID, userName: 'event events/daily.json' } });
  const daily = auditRecord(scheduled, [], snapshot, { outcome: 'finished', reason: 'end_turn', endedAt: 0 });
  assert.equal(daily.trigger, 'schedule');
  assert.deepEqual(daily.origin, { event: 'events/daily.json' });
  assert.equal('origin' in auditRecord(run(), [], snapshot, { outcome: 'finished', reason: 'x', endedAt: 0 }), false);
});

test('the key is a Hive-style date partition of the end date, in UTC', () => {
  assert.equal(auditKey('run-x', Date.parse('2026-01-02T23:59:59.999Z')), 'audit/year=2026/month=01/day=02/run-x.json');
  assert.equal(auditKey('run-x', Date.parse('2026-01-03T00:00:00+01:00')), 'audit/year=2026/month=01/day=02/run-x.json');
});

test('every way a run ends has its outcome', () => {
  assert.deepEqual(finishedRunEnd({ step: 2, next: 'finish', stopReason: 'end_turn' }, snapshot), {
    outcome: 'finished',
    reason: 'end_turn',
  });
  assert.deepEqual(finishedRunEnd({ step: 2, next: 'finish', stopReason: 'aborted' }, snapshot), {
    outcome: 'stopped',
    reason: 'stop requested',
  });
  assert.deepEqual(finishedRunEnd({ step: 5, next: 'finish', stopReason: 'limit' }, snapshot), {
    outcome: 'limit',
    reason: 'maxModelSteps',
  });
  assert.deepEqual(finishedRunEnd({ step: 2, next: 'finish', stopReason: 'limit' }, snapshot), {
    outcome: 'limit',
    reason: 'maxRunMinutes',
  });
  assert.deepEqual(failedRunEnd({ errorType: 'ThrottlingException', errorMessage: 'slow down' }), {
    outcome: 'failed',
    reason: 'ThrottlingException',
  });
  assert.deepEqual(failedRunEnd({ errorType: 'States.Timeout', errorMessage: '' }), { outcome: 'timed_out', reason: 'States.Timeout' });
  assert.deepEqual(executionRunEnd('ABORTED', 'Stopped', 'interrupted by a newer message'), {
    outcome: 'stopped',
    reason: 'interrupted by a newer message',
  });
  assert.deepEqual(executionRunEnd('TIMED_OUT', null, null), { outcome: 'timed_out', reason: 'States.Timeout' });
  assert.deepEqual(executionRunEnd('FAILED', 'AgentRunFailed', ''), { outcome: 'crashed', reason: 'AgentRunFailed' });
});

let table: TestTable;
before(async () => {
  table = await startTestTable('audit-test');
});
after(async () => {
  await table?.emulator.stop();
});

test('two end paths, the second after midnight: one object, the first outcome, under the first end date', async () => {
  const s3 = conditionalS3();
  let now = Date.parse('2026-11-24T23:59:59.000Z');
  const deps = {
    store: { s3: s3.client, bucket: 'bucket' },
    ledger: { db: table.db, tableName: table.tableName },
    now: () => now,
  };
  s3.objects.set(dataKeys(threadId).context, {
    body: Buffer.from(
      twoToolRun()
        .map((e) => JSON.stringify(e))
        .join('\n'),
    ),
    etag: '"c"',
  });
  const first = await recordRunEnd(deps, run(), { outcome: 'finished', reason: 'end_turn' });
  now += 5000;
  const second = await recordRunEnd(deps, run(), { outcome: 'crashed', reason: 'States.Runtime' });
  assert.deepEqual(first, { key: 'audit/year=2026/month=11/day=24/run-audit-1.json', written: true });
  assert.deepEqual(second, { key: first.key, written: false });
  const audits = [...s3.objects.keys()].filter((k) => k.startsWith('audit/'));
  assert.deepEqual(audits, [first.key]);
  const record = JSON.parse(s3.objects.get(first.key)!.body.toString()) as AuditRecord;
  assert.equal(record.outcome, 'finished');
  assert.equal(record.toolCalls.length, 3);
});
