// The audit trail through the whole local cloud: each run writes one record under audit/, with its
// tool calls, tokens, cost and outcome, whichever way it ends (finished, a retried finish, stopped,
// failed), a trigger's run names its origin, and nothing of what was said is in it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { actorKey } from '../../shared/table.ts';
import { gate, type RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import type { AuditRecord } from '../../shared/observability/audit.ts';
import type { RunInput } from '../../shared/contracts.ts';
import { type ContextEntry } from '../../shared/context/store.ts';
import { dataKeys } from '../../shared/ids.ts';
import { deleteData, putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';

const TRIGGERS = [
  {
    name: 'prod-alarms',
    source: { eventPattern: { source: ['aws.cloudwatch'], 'detail-type': ['CloudWatch Alarm State Change'] } },
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'Alarm {detail.alarmName} is {detail.state.value}',
  },
];

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ triggers: TRIGGERS });
});
after(async () => {
  await stack?.stop();
});

const threadOf = (posted: { channel: string; threadTs: string }) => `slack:${posted.channel}:${posted.threadTs}`;
const runsOf = (threadId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => (e.input as RunInput).threadId === threadId)
    .sort((a, b) => a.startDate.getTime() - b.startDate.getTime());
const runIdOf = async (threadId: string) => (await eventually(() => runsOf(threadId)[0], 30_000, `a run in ${threadId}`)).input as RunInput;

async function auditKeysOf(runId: string): Promise<string[]> {
  const out = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: 'audit/' }));
  return (out.Contents ?? []).map((o) => o.Key!).filter((key) => key.endsWith(`/${runId}.json`));
}

/** The run's one record, once it is there. */
async function recordOf(runId: string): Promise<{ key: string; record: AuditRecord }> {
  const [key] = await eventually(
    async () => {
      const keys = await auditKeysOf(runId);
      return keys.length ? keys : undefined;
    },
    60_000,
    `audit record of ${runId}`,
  );
  return { key: key!, record: JSON.parse((await readData(stack, key!))!) as AuditRecord };
}

/** Every PutObject of the key, by status: the first creates it, any later one must be refused. */
const putsOf = (key: string) =>
  stack.cloud.awsCalls
    .filter((c) => c.service === 's3' && c.method === 'PUT' && decodeURIComponent(c.path.split('?')[0]!).endsWith(`/${key}`))
    .map((c) => c.status);

test('a run with two tool calls writes one record: requester, place, model, the calls, tokens, cost, finished', async () => {
  stack.bedrock.script(
    {
      toolUses: [
        { toolUseId: 'tu-audit-1', name: 'bash', input: { command: 'echo audit-one' } },
        { toolUseId: 'tu-audit-2', name: 'bash', input: { command: 'exit 3' } },
      ],
    },
    { text: 'Both commands ran.' },
  );
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> run two commands, codeword zebra-audit' });
  const threadId = threadOf(posted);
  const run = await runIdOf(threadId);
  const { key, record } = await recordOf(run.runId);
  // The record is written before the finish step returns: let it end before the next test's fault.
  await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'run succeeded');
  const [year, month, day] = record.endedAt.slice(0, 10).split('-');
  assert.equal(key, `audit/year=${year}/month=${month}/day=${day}/${run.runId}.json`);
  assert.equal(record.runId, run.runId);
  assert.equal(record.threadId, threadId);
  assert.equal(record.adapter, 'slack');
  assert.equal(record.channel, posted.channel);
  assert.deepEqual(record.requester, run.prompt.author);
  assert.equal(record.trigger, 'message');
  assert.equal(record.outcome, 'finished');
  assert.equal(record.steps, 2);
  assert.ok(record.modelId);
  assert.deepEqual(
    record.toolCalls.map((c) => [c.name, c.outcome]),
    [
      ['bash', 'ok'],
      ['bash', 'error'],
    ],
  );
  for (const call of record.toolCalls) assert.ok(call.durationMs! >= 0 && Date.parse(call.startedAt!) >= Date.parse(record.startedAt));
  // Tokens and cost are the run's model steps', as their context entries recorded them.
  const context = (await readData(stack, dataKeys(threadId).context))!
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ContextEntry);
  const usages = context.filter((e) => e.role === 'assistant' && e.meta.runId === run.runId).map((e) => e.meta.usage!);
  assert.equal(usages.length, 2);
  assert.equal(
    record.tokens.input,
    usages.reduce((sum, u) => sum + (u.inputTokens ?? 0), 0),
  );
  assert.equal(
    record.tokens.output,
    usages.reduce((sum, u) => sum + (u.outputTokens ?? 0), 0),
  );
  assert.ok(record.costUsd! > 0);
  assert.ok(Math.abs(record.costUsd! - usages.reduce((sum, u) => sum + (u.costUsd ?? 0), 0)) < 1e-6);
  assert.ok(Date.parse(record.endedAt) >= Date.parse(record.startedAt));
  // Nothing said, asked or run is in the record.
  const json = JSON.stringify(record);
  for (const said of ['zebra-audit', 'audit-one', 'exit 3', 'Both commands ran']) assert.doesNotMatch(json, new RegExp(said));
  assert.deepEqual(putsOf(key), [200]);
});

test('a finish retried after it wrote the record: still one record, the retry is refused and the run succeeds', async () => {
  // A plain reply's one invocation (prepare, the model step, the finish) crashes once it is done; Step Functions retries it.
  stack.cloud.injectFault({ role: 'agentStep', action: 'prepare', when: 'after', errorName: 'Lambda.ServiceException' });
  stack.bedrock.script({ text: 'answer despite a finish crash' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> finish twice' });
  const threadId = threadOf(posted);
  const run = await runIdOf(threadId);
  await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'run succeeded');
  const { key, record } = await recordOf(run.runId);
  assert.equal(record.outcome, 'finished');
  assert.deepEqual(await auditKeysOf(run.runId), [key]);
  assert.deepEqual(putsOf(key), [200, 412], 'the retried finish tried again and S3 refused the second create');
});

test('a stopped run writes one record with outcome stopped', async () => {
  const hold = gate();
  stack.bedrock.script({ text: 'never finished', hold: hold.promise });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> think for a long time' });
  const threadId = threadOf(posted);
  const run = await runIdOf(threadId);
  await eventually(
    () => stack.bedrock.requests.some((r) => JSON.stringify(r.body.messages).includes('think for a long time')),
    30_000,
    'at the model',
  );
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 15_000, 'execution aborted');
  // The record is written while the model still holds its answer (the run-ended rule's end)...
  const { key, record } = await recordOf(run.runId);
  assert.equal(record.outcome, 'stopped');
  assert.equal(record.steps, 0);
  // ...and the stopped model step's late return writes no second one.
  hold.release();
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(await auditKeysOf(run.runId), [key]);
  assert.equal(putsOf(key)[0], 200);
  assert.ok(
    putsOf(key)
      .slice(1)
      .every((status) => status === 412),
  );
});

test('a failed run writes one record with outcome failed, though the run-ended rule sees it end too', async () => {
  // Prepare's invocation, which goes on into the first model step, fails.
  stack.cloud.injectFault({ role: 'agentStep', action: 'prepare', when: 'before', errorName: 'Runtime.ExitError' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> this one crashes' });
  const threadId = threadOf(posted);
  const run = await runIdOf(threadId);
  await eventually(() => runsOf(threadId)[0]?.status === 'FAILED', 30_000, 'execution failed');
  const { key, record } = await recordOf(run.runId);
  assert.equal(record.outcome, 'failed');
  assert.equal(record.reason, 'Runtime.ExitError');
  // The run-ended rule's handler tried too, and was refused.
  await eventually(() => putsOf(key).length === 2, 30_000, 'run-ended wrote its attempt');
  assert.deepEqual(putsOf(key), [200, 412]);
  assert.deepEqual(await auditKeysOf(run.runId), [key]);
});

test("a declared trigger's run carries its trigger name and event id", async () => {
  stack.bedrock.script({ text: 'looked at the alarm' });
  stack.cloud.eventBridge.sendServiceEvent({
    source: 'aws.cloudwatch',
    'detail-type': 'CloudWatch Alarm State Change',
    resources: ['arn:aws:cloudwatch:us-east-1:000000000000:alarm:AuditAlarm'],
    detail: { alarmName: 'AuditAlarm', state: { value: 'ALARM' } },
  });
  await stack.cloud.eventBridge.drain();
  const execution = await eventually(
    () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as RunInput).prompt.source?.trigger === 'prod-alarms'),
    30_000,
    'the trigger run',
  );
  const run = execution.input as RunInput;
  const { record } = await recordOf(run.runId);
  assert.equal(record.trigger, 'trigger');
  assert.equal(record.origin?.trigger, 'prod-alarms');
  assert.ok(record.origin?.eventId);
  assert.equal(record.origin?.eventId, run.prompt.source?.eventId);
  assert.equal(record.requester.userId, 'event');
  assert.equal(record.channel, 'C0OPS');
  assert.equal(record.outcome, 'finished');
  assert.doesNotMatch(JSON.stringify(record), /AuditAlarm is ALARM/);
});

test('a run cut at its model-call limit writes one record with outcome limit, its unrun tool call skipped', async () => {
  await putData(stack, 'settings.json', { maxModelSteps: 1 });
  try {
    stack.bedrock.script({ toolUses: [{ toolUseId: 'tu-audit-limit', name: 'bash', input: { command: 'echo never' } }] });
    const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> work past the limit' });
    const threadId = threadOf(posted);
    const run = await runIdOf(threadId);
    const { record } = await recordOf(run.runId);
    assert.equal(record.outcome, 'limit');
    assert.equal(record.reason, 'maxModelSteps');
    assert.equal(record.steps, 1);
    assert.deepEqual(record.toolCalls, [{ name: 'bash', outcome: 'skipped' }]);
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'run succeeded');
  } finally {
    await deleteData(stack, 'settings.json');
  }
});

// Subagents: child runs of the agent-run state machine, started by a run's `subagent` tool calls.
const isChild = (r: RecordedRequest) => JSON.stringify(r.body.system).includes('You are a subagent');
const messagesOf = (r: RecordedRequest) => JSON.stringify(r.body.messages);
const toolNamesOf = (r: RecordedRequest) => (r.body.toolConfig?.tools ?? []).flatMap((t) => (t.toolSpec?.name ? [t.toolSpec.name] : []));
const childRunsOf = (parentRunId: string) =>
  [...stack.cloud.stepFunctions.executions.values()].filter((e) => (e.input as RunInput).child?.parentRunId === parentRunId);

test('two subagent calls in one answer run in parallel, each result returns to its call, the thread sees one status line and the audit nests the children', async () => {
  await putData(stack, 'settings.json', JSON.stringify({ maxSubagentDepth: 1 }));
  try {
    // Each child's answer is held until the other child's request has reached the model: they can only
    // both finish if their model calls overlap in time.
    const applesWait = gate();
    const pearsWait = gate();
    const parentFirst = (r: RecordedRequest) =>
      !isChild(r) && messagesOf(r).includes('delegate-fruit') && !messagesOf(r).includes('toolResult');
    stack.bedrock.script(
      {
        takenBy: parentFirst,
        toolUses: [
          { toolUseId: 'tu_apples', name: 'subagent', input: { task: 'count the apples in the crate' } },
          { toolUseId: 'tu_pears', name: 'subagent', input: { task: 'count the pears in the basket', context: 'the basket is blue' } },
        ],
      },
      {
        takenBy: (r) => {
          const mine = isChild(r) && messagesOf(r).includes('count the apples');
          if (mine) pearsWait.release();
          return mine;
        },
        text: 'There are 7 apples.',
        hold: applesWait.promise,
      },
      {
        takenBy: (r) => {
          const mine = isChild(r) && messagesOf(r).includes('count the pears');
          if (mine) applesWait.release();
          return mine;
        },
        text: 'There are 3 pears.',
        hold: pearsWait.promise,
      },
      { takenBy: (r) => !isChild(r) && messagesOf(r).includes('tu_apples'), text: 'Fruit counted: 7 apples and 3 pears.' },
    );
    const posted = await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: '<@U0LOCALBOT> delegate-fruit please' });
    const threadId = threadOf(posted);
    const parent = await runIdOf(threadId);
    const answered = await eventually(
      () => stack.bedrock.requests.find((r) => !isChild(r) && messagesOf(r).includes('tu_apples') && messagesOf(r).includes('toolResult')),
      60_000,
      "the parent's second model call",
    );
    // Each call id carries its own child's answer.
    const results = answered.body.messages!.flatMap((m) => m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : []));
    const resultText = (id: string) => JSON.stringify(results.find((r) => r.toolUseId === id)?.content);
    assert.match(resultText('tu_apples'), /finished after 1 model call[^]*There are 7 apples/);
    assert.match(resultText('tu_pears'), /There are 3 pears/);
    assert.doesNotMatch(resultText('tu_apples'), /pears/);

    // Each child worked on a fresh context of its own: its task, not the thread's conversation.
    const children = stack.bedrock.requests.filter(isChild);
    assert.equal(children.length, 2);
    for (const child of children) assert.doesNotMatch(messagesOf(child), /delegate-fruit/);
    assert.match(messagesOf(children.find((r) => messagesOf(r).includes('pears'))!), /the basket is blue/);
    // At the maximum depth (1 here) a child is not offered the subagent tool; its parent is.
    assert.ok(toolNamesOf(answered).includes('subagent'));
    for (const child of children) assert.ok(!toolNamesOf(child).includes('subagent'), toolNamesOf(child).join(','));

    // The thread: the parent's answer only, and one status line naming both children while they worked.
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'the parent finished');
    const replies = stack.slack.messages
      .thread(posted.channel, posted.threadTs)
      .filter((m) => m.bot_id && !m.local.deleted && !m.blocks?.length)
      .map((m) => m.text);
    assert.deepEqual(replies, ['Fruit counted: 7 apples and 3 pears.']);
    const statuses = stack.slack.calls
      .filter((c) => c.method === 'assistant.threads.setStatus' && c.args.thread_ts === posted.threadTs)
      .map((c) => String(c.args.status));
    assert.ok(
      statuses.some((s) => /^Subagents: subagent 1: .+ · subagent 2: .+/.test(s)),
      statuses.join('\n'),
    );

    // The audit: the parent's record names each child under its call; each child's names its parent.
    const { record } = await recordOf(parent.runId);
    const calls = record.toolCalls.filter((c) => c.name === 'subagent');
    assert.equal(calls.length, 2);
    const childRuns = childRunsOf(parent.runId).map((e) => (e.input as RunInput).runId);
    assert.deepEqual(calls.map((c) => c.subagent?.runId).sort(), [...childRuns].sort());
    assert.ok(calls.every((c) => c.subagent?.outcome === 'finished' && c.subagent.steps === 1));
    for (const runId of childRuns) {
      const child = (await recordOf(runId)).record;
      assert.deepEqual(child.parent && { runId: child.parent.runId, depth: child.parent.depth }, { runId: parent.runId, depth: 1 });
      assert.equal(child.outcome, 'finished');
    }
  } finally {
    await deleteData(stack, 'settings.json');
  }
});

test('a stop of the parent stops its subagents: their executions end and the thread is free', async () => {
  const hold = gate();
  stack.bedrock.script(
    {
      takenBy: (r) => !isChild(r) && messagesOf(r).includes('delegate-slow'),
      toolUses: [{ toolUseId: 'tu_slow', name: 'subagent', input: { task: 'think very slowly' } }],
    },
    { takenBy: (r) => isChild(r) && messagesOf(r).includes('think very slowly'), text: 'never finished', hold: hold.promise },
  );
  try {
    const posted = await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: '<@U0LOCALBOT> delegate-slow now' });
    const threadId = threadOf(posted);
    const parent = await runIdOf(threadId);
    await eventually(
      () => stack.bedrock.requests.some((r) => isChild(r) && messagesOf(r).includes('think very slowly')),
      60_000,
      'the child at the model',
    );
    await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: 'stop', threadTs: posted.threadTs });
    await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 15_000, 'the parent stopped');
    const [child] = childRunsOf(parent.runId);
    assert.ok(child, 'the child was started');
    await eventually(() => child.status !== 'RUNNING', 20_000, 'the child stopped too');
    const { record } = await recordOf((child.input as RunInput).runId);
    assert.equal(record.outcome, 'stopped');
    assert.equal(record.parent?.runId, parent.runId);
    // The thread takes the next prompt at once.
    stack.bedrock.script({ takenBy: (r) => messagesOf(r).includes('after-stop'), text: 'free again' });
    await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: 'after-stop hello', threadTs: posted.threadTs });
    await eventually(
      () => stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.bot_id && m.text === 'free again'),
      30_000,
      'the next prompt answered',
    );
  } finally {
    hold.release();
  }
});

test('past maxSubagentDepth a subagent call starts nothing, whatever the model calls', async () => {
  await putData(stack, 'settings.json', JSON.stringify({ maxSubagentDepth: 0 }));
  try {
    stack.bedrock.script(
      {
        takenBy: (r) => messagesOf(r).includes('delegate-none') && !messagesOf(r).includes('toolResult'),
        toolUses: [{ toolUseId: 'tu_none', name: 'subagent', input: { task: 'anything' } }],
      },
      { takenBy: (r) => messagesOf(r).includes('tu_none'), text: 'I will do it myself.' },
    );
    const posted = await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: '<@U0LOCALBOT> delegate-none' });
    const threadId = threadOf(posted);
    const parent = await runIdOf(threadId);
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 60_000, 'the run finished');
    const first = stack.bedrock.requests.find((r) => messagesOf(r).includes('delegate-none'))!;
    assert.ok(!toolNamesOf(first).includes('subagent'), 'not offered');
    const answered = stack.bedrock.requests.find((r) => messagesOf(r).includes('tu_none'))!;
    assert.match(messagesOf(answered), /subagent is not available in this run: subagents may nest at most maxSubagentDepth deep/);
    assert.deepEqual(childRunsOf(parent.runId), []);
  } finally {
    await deleteData(stack, 'settings.json');
  }
});

test("a steer while the run waits for its subagents keeps the children's answers: each call gets its child's, then the steer", async () => {
  const hold = gate();
  stack.bedrock.script(
    {
      takenBy: (r) => !isChild(r) && messagesOf(r).includes('delegate-steer') && !messagesOf(r).includes('toolResult'),
      toolUses: [{ toolUseId: 'tu_steered', name: 'subagent', input: { task: 'list the plums' } }],
    },
    { takenBy: (r) => isChild(r) && messagesOf(r).includes('list the plums'), text: 'Two plums.', hold: hold.promise },
    { takenBy: (r) => !isChild(r) && messagesOf(r).includes('tu_steered'), text: 'Two plums, and noted.' },
  );
  try {
    const posted = await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: '<@U0LOCALBOT> delegate-steer go' });
    const threadId = threadOf(posted);
    await eventually(() => runsOf(threadId)[0]?.history.at(-1)?.name === 'AwaitSubagents', 60_000, 'the parent waiting');
    await stack.slack.postUserMessage({ channel: 'C0SUBAGENTS', text: 'steer only the ripe ones', threadTs: posted.threadTs });
    const db = documentClient(stack.cloud.clients.dynamodb);
    await eventually(
      async () => {
        const actor = await db.send(new GetCommand({ TableName: stack.cloud.names.table, Key: actorKey(threadId) }));
        return (actor.Item?.steer as unknown[] | undefined)?.length === 1;
      },
      15_000,
      'the steer waiting on the actor',
    );
    hold.release();
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 60_000, 'the parent finished');
    const last = stack.bedrock.requests.find((r) => !isChild(r) && messagesOf(r).includes('tu_steered'))!;
    const content = (last.body.messages ?? []).flatMap((m) => m.content ?? []);
    const result = content.find((b) => b.toolResult?.toolUseId === 'tu_steered')!.toolResult!;
    assert.match(JSON.stringify(result.content), /Two plums/);
    assert.ok(
      content.some((b) => /^\(steering while you worked\) .*only the ripe ones$/.test(b.text ?? '')),
      JSON.stringify(content),
    );
  } finally {
    hold.release();
  }
});
