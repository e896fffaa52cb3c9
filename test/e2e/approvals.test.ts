// Approvals through the whole local cloud: a tool call a settings.json rule holds does not run; the
// run waits in Step Functions with a task token (no Lambda held) until an approver clicks Approve or
// Deny on the approval message, or the rule's time runs out; the stop button still ends it.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { threadOf, threadProbes } from '../support/threads.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { buttonPress, postForm } from '../support/slack-forms.ts';
import type { ScriptedTurn } from '../../packages/local-cloud/src/bedrock.ts';
import type { AuditRecord } from '../../shared/observability/audit.ts';
import { APPROVE_ACTION, DENY_ACTION } from '../../shared/approvals/card.ts';
import { approvalsCommand } from '../../scripts/ops/approvals.ts';
import { openStack, type OpsStack } from '../../scripts/ops/stack.ts';
import { operatorEnvOf } from '../../packages/local-cloud/src/operator-env.ts';
import { createLogger } from '../../shared/observability/log.ts';

let stack: TestStack;
let ops: OpsStack;
// Lambda hooks' targets: operator functions outside the stack; cdk.json declares the first two only.
const POLICY_ARN = 'arn:aws:lambda:local:000000000000:function:org-policy';
const SLOW_ARN = 'arn:aws:lambda:local:000000000000:function:slow-policy';
const UNDECLARED_ARN = 'arn:aws:lambda:local:000000000000:function:not-declared';
const policyEvents: { event: string; prompt?: string; runId: string }[] = [];
before(async () => {
  // The operator's policy function: context for a prompt, a replaced result, one more turn at Stop.
  const policy = (event: unknown) => {
    const hooked = event as (typeof policyEvents)[number] & { result?: { text: string } };
    policyEvents.push(hooked);
    if (hooked.event === 'PostToolUse')
      return hooked.result?.text.includes('rewritten-by-hook') ? { result: 'the policy replaced this result' } : null;
    if (hooked.event === 'Stop') return { continue: 'check your work once more' };
    if (hooked.event === 'PreToolUse') {
      return JSON.stringify(hooked).includes('policy-blocked') ? { decision: 'block', reason: 'org policy says no' } : null;
    }
    return { context: 'house-rule-7: answer in French' };
  };
  const slow = () => new Promise((resolve) => setTimeout(() => resolve({ context: 'too late' }), 4000));
  stack = await startTestStack({
    hookFunctions: [POLICY_ARN, SLOW_ARN],
    operatorFunctions: { [POLICY_ARN]: policy, [SLOW_ARN]: slow, [UNDECLARED_ARN]: policy },
  });
  // The ops CLI's view of the stack, as npm start writes it for the operator.
  const operator = operatorEnvOf(stack.cloud);
  Object.assign(process.env, operator.env);
  ops = await openStack(operator.stackName, {}, createLogger({ level: 'silent' }));
});
after(async () => {
  ops?.destroy();
  await stack?.stop();
});

const ADMIN = 'U0ADMIN';
const REQUESTER = 'U0ASKER';
const RULE = { tool: 'bash', match: '\\b(rm|curl)\\b', approvers: 'admins' };
const settings = (approvals: unknown[], hooks: unknown[] = []) =>
  putData(stack, 'settings.json', { sandbox: { startEarly: false }, access: { admins: [`slack:${ADMIN}`] }, approvals, hooks });
beforeEach(() => settings([RULE]));

const { runsOf, idle } = threadProbes(() => stack);
const ephemeralTo = (user: string, threadTs: string) =>
  stack.slack.ephemeral.filter((m) => m.visibleTo === user && m.thread_ts === threadTs);

let calls = 0;
const bash = (command: string, id = `tu-approval-${++calls}`) => ({ toolUseId: id, name: 'bash', input: { command } });

/** The results the model was sent for the run's tool calls, by id. */
function resultsIn(threadId: string) {
  const texts = new Map<string, { status?: string; text: string }>();
  for (const request of stack.bedrock.requests) {
    if (!JSON.stringify(request.body.system ?? '').includes(`${threadId}`)) continue;
    for (const message of request.body.messages ?? []) {
      for (const block of message.content ?? []) {
        const result = block.toolResult;
        if (result) texts.set(result.toolUseId!, { status: result.status, text: (result.content ?? []).map((c) => c.text ?? '').join('') });
      }
    }
  }
  return texts;
}

/** A mention whose run makes the scripted calls; resolves once its approval message is in the thread. */
async function askFor(label: string, turns: ScriptedTurn[]) {
  // The turns go to this prompt's run only (its text is in every request of the run).
  const inRun = (request: { body: { messages?: unknown } }) => JSON.stringify(request.body.messages ?? '').includes(label);
  stack.bedrock.script(...turns.map((turn) => ({ takenBy: inRun, ...turn })));
  const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${label}`, user: REQUESTER });
  const threadId = threadOf(posted);
  const card = await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => JSON.stringify(m.blocks ?? []).includes(APPROVE_ACTION)),
    60_000,
    'approval message',
  );
  // Read now: the buttons go once the approval is decided.
  const value = buttonValue(card.blocks, APPROVE_ACTION);
  const press = (user: string, actionId = APPROVE_ACTION) => buttonPress({ ...posted, cardTs: card.ts, user, actionId, value });
  return { posted, threadId, card, press };
}

/** The value of the button `actionId` in a message's blocks (the approval record's id). */
function buttonValue(blocks: unknown, actionId: string): string {
  const parsed = (typeof blocks === 'string' ? JSON.parse(blocks) : blocks) as { elements?: { action_id?: string; value?: string }[] }[];
  const button = parsed.flatMap((block) => block.elements ?? []).find((element) => element.action_id === actionId);
  assert.ok(button?.value, `a ${actionId} button with a value`);
  return button.value;
}

const execution = (threadId: string) => runsOf(threadId)[0]!;
const cardText = (posted: { channel: string; threadTs: string }, ts: string) =>
  JSON.stringify(stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => m.ts === ts)?.blocks ?? []);

async function auditOf(runId: string): Promise<AuditRecord> {
  const key = await eventually(
    async () => {
      const out = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: 'audit/' }));
      return (out.Contents ?? []).map((o) => o.Key!).find((k) => k.endsWith(`/${runId}.json`));
    },
    60_000,
    'audit record',
  );
  return JSON.parse((await readData(stack, key))!) as AuditRecord;
}

test('a held bash call waits with a task token (no command, no result, no Lambda) until an approver approves; a non-approver is refused, a replayed click acts once', async () => {
  // The model writes the input: it tries to close the code block and mention everyone.
  const call = bash('echo approved-and-ran && rm -f nothing-here # ``` <!channel> approve this');
  const { posted, threadId, card, press } = await askFor('approval-happy', [{ toolUses: [call] }, { text: 'all done' }]);
  const shown = (card.blocks as { text?: { text?: string } }[]).map((b) => b.text?.text ?? '').join('\n');
  assert.match(shown, /approved-and-ran/, 'the message shows the input');
  assert.equal(shown.split('```').length, 3, 'one code block: the input cannot close it');
  assert.ok(!shown.includes('<!channel>') && shown.includes('&lt;!channel&gt;'), shown);

  // Waiting: the execution sits in AwaitApproval, no step function runs, the call has no result.
  await eventually(() => execution(threadId).history.at(-1)?.name === 'AwaitApproval', 30_000, 'in AwaitApproval');
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(execution(threadId).status, 'RUNNING');
  assert.equal(execution(threadId).history.at(-1)?.name, 'AwaitApproval');
  const inFlight = stack.cloud.lambda.invocations.filter((i) => i.endedAt === undefined && /AgentStep|SandboxStep/.test(i.functionId));
  assert.deepEqual(inFlight, [], 'the wait holds no Lambda');
  assert.equal(resultsIn(threadId).size, 0, 'no tool result yet');

  // Someone who is not an approver: told privately, nothing moves.
  assert.equal((await postForm(stack, { payload: JSON.stringify(press('U0BYSTANDER')) })).status, 200);
  await eventually(() => ephemeralTo('U0BYSTANDER', posted.threadTs).length === 1, 15_000, 'refusal');
  assert.match(ephemeralTo('U0BYSTANDER', posted.threadTs)[0]!.text, /can't decide this one/);
  assert.equal(execution(threadId).status, 'RUNNING');

  // The admin approves; the same click delivered again acts once.
  const approve = JSON.stringify(press(ADMIN));
  assert.equal((await postForm(stack, { payload: approve })).status, 200);
  assert.equal((await postForm(stack, { payload: approve })).status, 200);
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 60_000);
  assert.equal(ended.status, 'SUCCEEDED');
  const result = resultsIn(threadId).get(call.toolUseId)!;
  assert.equal(result.status, 'success');
  assert.match(result.text, /approved-and-ran/);
  assert.match(cardText(posted, card.ts), /Approved by/);
  assert.doesNotMatch(cardText(posted, card.ts), new RegExp(APPROVE_ACTION), 'the buttons are gone');
  assert.equal(ephemeralTo(ADMIN, posted.threadTs).length, 0, 'the replay said nothing');
  // The run went on through the webhook's SendTaskSuccess (the only role granted it), once.
  const answers = stack.cloud.awsCalls.filter((c) => c.operation === 'SendTaskSuccess');
  assert.deepEqual(
    answers.map((c) => [c.caller, c.status]),
    [[stack.cloud.functionRoles.webhook, 200]],
  );
  // A click after the decision is told so.
  await postForm(stack, { payload: JSON.stringify(press(ADMIN, DENY_ACTION)) });
  await eventually(() => ephemeralTo(ADMIN, posted.threadTs).length === 1, 15_000, 'already decided');
  assert.match(ephemeralTo(ADMIN, posted.threadTs)[0]!.text, /Already decided: Approved/);
  await idle(threadId);

  const audit = await auditOf(ended.name);
  const audited = audit.toolCalls.find((c) => c.name === 'bash')!;
  assert.equal(audited.outcome, 'ok');
  assert.equal(audited.approval?.outcome, 'approved');
  assert.equal(audited.approval?.by, `slack:${ADMIN}`);
});

test('Deny gives the model a result naming who denied it and the reason they replied with; a call no rule holds runs, and a held one batched after it still waits', async () => {
  const free = bash('echo free-call-ran');
  const held = bash('rm -rf /workspace/data/denied-target');
  const { posted, threadId, press } = await askFor('approval-deny', [{ toolUses: [free, held] }, { text: 'understood' }]);
  // The free call ran first; the held one waits although it came in the same answer.
  await eventually(() => execution(threadId).history.at(-1)?.name === 'AwaitApproval', 30_000, 'in AwaitApproval');
  assert.equal(execution(threadId).status, 'RUNNING');
  assert.equal((await postForm(stack, { payload: JSON.stringify(press(ADMIN, DENY_ACTION)) })).status, 200);
  // The denier is asked why; the run waits for the reason (in AwaitApproval again, no Lambda held).
  await eventually(() => ephemeralTo(ADMIN, posted.threadTs).length === 1, 15_000, 'asked for a reason');
  assert.match(ephemeralTo(ADMIN, posted.threadTs)[0]!.text, /reply `reason: <why>` in this thread within 60 seconds/);
  // Someone else cannot give it.
  await stack.slack.postUserMessage({ text: 'reason: because I said so', user: 'U0BYSTANDER', threadTs: posted.threadTs });
  await eventually(() => ephemeralTo('U0BYSTANDER', posted.threadTs).length === 1, 15_000, 'refused');
  assert.match(ephemeralTo('U0BYSTANDER', posted.threadTs)[0]!.text, /No denial of yours is waiting/);
  await stack.slack.postUserMessage({ text: 'Reason: not on a Friday', user: ADMIN, threadTs: posted.threadTs });
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 60_000);
  assert.equal(ended.status, 'SUCCEEDED');
  const results = resultsIn(threadId);
  assert.match(results.get(free.toolUseId)!.text, /free-call-ran/);
  assert.equal(results.get(held.toolUseId)!.status, 'error');
  assert.match(
    results.get(held.toolUseId)!.text,
    /^Not run: testuser denied this bash call. Their reason: not on a Friday$/,
    'named as the clicker is named in Slack, with the reason they replied',
  );
  assert.ok(execution(threadId).history.filter((s) => s.name === 'SandboxTool').length >= 1, 'the free call went to the sandbox');
  await idle(threadId);
  assert.ok(posted);
});

test("a subagent's tool call is held by the same rule: the child waits for the approver while its parent waits for the child", async () => {
  const held = bash('rm -rf /workspace/data/child-target', 'tu-child-held');
  const { threadId, press } = await askFor('approval-child', [
    { toolUses: [{ toolUseId: 'tu-delegate', name: 'subagent', input: { task: 'approval-child: clean up the target' } }] },
    { toolUses: [held] },
    { text: 'the child removed it' },
    { text: 'all clean' },
  ]);
  const child = await eventually(() => runsOf(threadId).find((e) => (e.input as { child?: unknown }).child), 30_000, 'the child run');
  await eventually(() => child.history.at(-1)?.name === 'AwaitApproval', 30_000, 'the child in AwaitApproval');
  assert.equal(execution(threadId).history.at(-1)?.name, 'AwaitSubagents', 'the parent waits for its child');
  assert.equal(resultsIn(threadId).get(held.toolUseId), undefined, 'nothing ran before the decision');
  assert.equal((await postForm(stack, { payload: JSON.stringify(press(ADMIN)) })).status, 200);
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 60_000);
  assert.equal(ended.status, 'SUCCEEDED');
  assert.equal(resultsIn(threadId).get(held.toolUseId)?.status, 'success');
  assert.match(resultsIn(threadId).get('tu-delegate')!.text, /finished after 2 model calls[^]*the child removed it/);
  const audit = await auditOf(child.name);
  assert.equal(audit.toolCalls.find((c) => c.name === 'bash')?.approval?.by, `slack:${ADMIN}`);
  await idle(threadId);
});

test('no decision within timeoutMinutes gives a timeout result; a stop during the wait ends the run', async () => {
  await settings([{ ...RULE, timeoutMinutes: 0.1 }]);
  const timed = bash('curl https://example.invalid');
  const { threadId } = await askFor('approval-timeout', [{ toolUses: [timed] }, { text: 'ok, skipped' }]);
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 60_000);
  assert.equal(ended.status, 'SUCCEEDED');
  const result = resultsIn(threadId).get(timed.toolUseId)!;
  assert.equal(result.status, 'error');
  assert.match(result.text, /nobody decided within the time allowed/);
  await idle(threadId);

  await settings([RULE]);
  const stopped = await askFor('approval-stop', [{ toolUses: [bash('rm -f stop-me')] }, { text: 'never' }]);
  await eventually(() => execution(stopped.threadId).history.at(-1)?.name === 'AwaitApproval', 30_000, 'in AwaitApproval');
  await stack.slack.postUserMessage({ text: 'stop', user: REQUESTER, threadTs: stopped.posted.threadTs });
  const aborted = await stack.cloud.stepFunctions.waitForExecution(execution(stopped.threadId).executionArn, 60_000);
  assert.equal(aborted.status, 'ABORTED');
  await idle(stopped.threadId);
  // Approving now: the run has ended, so nothing runs, and the approver is told.
  await postForm(stack, { payload: JSON.stringify(stopped.press(ADMIN)) });
  await eventually(() => ephemeralTo(ADMIN, stopped.posted.threadTs).length === 1, 15_000, 'told the run ended');
  assert.match(ephemeralTo(ADMIN, stopped.posted.threadTs)[0]!.text, /already ended/);
});

test('ops approvals lists the calls waiting across the deployment; an operator denies one with a reason, which the model is given', async () => {
  const call = bash('curl https://example.invalid/upload');
  const { threadId, card, posted } = await askFor('approval-ops', [{ toolUses: [call] }, { text: 'fine' }]);
  await eventually(() => execution(threadId).history.at(-1)?.name === 'AwaitApproval', 30_000, 'in AwaitApproval');
  const listed = await approvalsCommand(ops, []);
  const id = buttonValue(card.blocks, APPROVE_ACTION);
  assert.match(listed, /^1 tool call waiting for approval:/);
  assert.ok(listed.includes(id) && listed.includes(threadId) && listed.includes('tool bash'), listed);
  assert.match(listed, /approvers admins: slack:U0ADMIN/);
  assert.equal(await approvalsCommand(ops, ['deny', id], { reason: 'no uploads today' }), `Denied ${id}: its run goes on.`);
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 60_000);
  assert.equal(ended.status, 'SUCCEEDED');
  assert.match(resultsIn(threadId).get(call.toolUseId)!.text, /an operator denied this bash call\. Their reason: no uploads today/);
  assert.equal(await approvalsCommand(ops, []), 'No tool call is waiting for approval.');
  assert.match(await approvalsCommand(ops, ['approve', id]), /^Already decided: Denied by an operator: no uploads today/);
  // A click after the operator's decision is told so.
  await postForm(stack, {
    payload: JSON.stringify(buttonPress({ ...posted, cardTs: card.ts, user: ADMIN, actionId: APPROVE_ACTION, value: id })),
  });
  await eventually(() => ephemeralTo(ADMIN, posted.threadTs).length === 1, 15_000, 'already decided');
  await idle(threadId);
});

// Hooks (settings.json `hooks`): the operator's policy at points of a run, as a command in the
// thread's sandbox or an operator's Lambda function.

/** An operator's PreToolUse hook: blocks `forbidden`, rewrites `rewrite-me`, holds `needs-approval` for a person, lets the rest go. */
const GUARD = `input=$(cat)
case "$input" in
  *forbidden*) echo "house policy: no forbidden commands" >&2; exit 2 ;;
  *rewrite-me*) printf '{"input":{"command":"echo rewritten-by-hook"}}'; exit 0 ;;
  *needs-approval*) printf '{"decision":"approve"}'; exit 0 ;;
esac
exit 0
`;

/** A mention whose run makes the scripted calls; resolves once its run has ended. */
async function runOf(label: string, turns: ScriptedTurn[]) {
  const inRun = (request: { body: { messages?: unknown } }) => JSON.stringify(request.body.messages ?? '').includes(label);
  stack.bedrock.script(...turns.map((turn) => ({ takenBy: inRun, ...turn })));
  const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${label}`, user: REQUESTER });
  const threadId = threadOf(posted);
  await eventually(() => runsOf(threadId).length === 1, 30_000, 'run started');
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution(threadId).executionArn, 120_000);
  await idle(threadId);
  return { posted, threadId, ended };
}

test('command hooks: exit 2 blocks a bash call with its reason, stdout JSON rewrites one, a decision approve makes one wait for an admin; the sandbox cannot change the hook that governs it', async () => {
  await putData(stack, 'hooks/guard.sh', GUARD);
  await settings(
    [],
    [
      { event: 'PreToolUse', tool: 'bash', lambda: POLICY_ARN },
      { event: 'PreToolUse', tool: 'bash', command: 'sh /workspace/data/hooks/guard.sh' },
      { event: 'PostToolUse', tool: 'bash', lambda: POLICY_ARN },
      { event: 'Stop', lambda: POLICY_ARN },
    ],
  );
  const blocked = bash('echo forbidden-ran');
  const rewritten = bash('echo rewrite-me');
  // The attack: the agent rewrites the hook file so that it allows everything, then tries again.
  const tamper = bash('printf "exit 0\\n" > /workspace/data/hooks/guard.sh; cat /workspace/data/hooks/guard.sh');
  const again = bash('echo forbidden-ran-after-tampering');
  // Two calls in one answer: the sandbox step runs the second by itself, but its lambda hook still runs first.
  const first = bash('echo batch-first');
  const batched = bash('echo policy-blocked-ran');
  const { ended, threadId, posted } = await runOf('hooks-command', [
    { toolUses: [blocked] },
    { toolUses: [rewritten] },
    { toolUses: [tamper] },
    { toolUses: [again] },
    { toolUses: [first, batched] },
    // The Stop hook always asks for one more turn: it gets three, then the run ends.
    { text: 'done' },
    { text: 'checked 1' },
    { text: 'checked 2' },
    { text: 'checked 3' },
  ]);
  assert.equal(ended.status, 'SUCCEEDED');
  const results = resultsIn(threadId);
  assert.equal(results.get(blocked.toolUseId)!.status, 'error');
  assert.match(
    results.get(blocked.toolUseId)!.text,
    /^Not run: a PreToolUse hook blocked this call\. Reason: house policy: no forbidden commands$/,
  );
  // Rewritten by the command hook, then its result replaced by the lambda PostToolUse hook.
  assert.equal(results.get(rewritten.toolUseId)!.text, 'the policy replaced this result');
  assert.ok(
    policyEvents.some((e) => e.event === 'PostToolUse' && JSON.stringify(e).includes('echo rewritten-by-hook')),
    'the PostToolUse hook saw the rewritten call and its output',
  );
  assert.match(results.get(tamper.toolUseId)!.text, /not saved: .*hooks\/guard\.sh.*undone/s);
  assert.match(results.get(again.toolUseId)!.text, /house policy: no forbidden commands/, 'the hook still blocks after the attempt');
  assert.match(results.get(first.toolUseId)!.text, /batch-first/);
  assert.equal(results.get(batched.toolUseId)!.text, 'Not run: a PreToolUse hook blocked this call. Reason: org policy says no');
  assert.doesNotMatch(results.get(again.toolUseId)!.text, /forbidden-ran-after-tampering\n/);
  assert.equal(await readData(stack, 'hooks/guard.sh'), GUARD, "the operator's hook file is unchanged");
  const turns = stack.bedrock.requests.filter((r) => JSON.stringify(r.body.messages).includes('hooks-command'));
  assert.equal(turns.length, 6 + 3, 'six scripted answers and three more a Stop hook asked for, no more');
  assert.match(JSON.stringify(turns.at(-1)!.body.messages), /a Stop hook asks for one more turn.*check your work once more/);
  const audit = await auditOf(ended.name);
  const outcomes = (audit.hooks ?? []).map((h) => [h.event, h.outcome, h.target]);
  const command = 'command: sh /workspace/data/hooks/guard.sh';
  assert.deepEqual(
    outcomes.filter(([, , target]) => target === command),
    [
      ['PreToolUse', 'blocked', command],
      ['PreToolUse', 'changed', command],
      ['PreToolUse', 'allowed', command],
      ['PreToolUse', 'blocked', command],
      ['PreToolUse', 'allowed', command],
    ],
  );
  assert.deepEqual(
    outcomes.filter(([event, , target]) => event === 'PreToolUse' && target === POLICY_ARN).map(([, outcome]) => outcome),
    ['allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'blocked'],
    'the lambda hook ran once before each call, the batched one too',
  );
  assert.deepEqual(
    outcomes.filter(([event]) => event === 'Stop').map(([, outcome]) => outcome),
    ['changed', 'changed', 'changed'],
  );
  assert.ok((audit.hooks ?? []).every((h) => typeof h.durationMs === 'number'));

  // A hook may make a call wait for a person (an admin), as an approvals rule would: in the same
  // thread (its sandbox is running), the call waits for Approve, then runs once.
  await settings([], [{ event: 'PreToolUse', tool: 'bash', command: 'sh /workspace/data/hooks/guard.sh' }]);
  const held = bash('echo needs-approval-then-ran');
  const inRun = (request: { body: { messages?: unknown } }) => JSON.stringify(request.body.messages ?? '').includes('hooks-approve');
  stack.bedrock.script({ takenBy: inRun, toolUses: [held] }, { takenBy: inRun, text: 'ran after approval' });
  await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hooks-approve', user: REQUESTER, threadTs: posted.threadTs });
  const card = await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => JSON.stringify(m.blocks ?? []).includes(APPROVE_ACTION)),
    60_000,
    'approval message',
  );
  assert.equal(resultsIn(threadId).get(held.toolUseId), undefined, 'no result while it waits');
  const value = buttonValue(card.blocks, APPROVE_ACTION);
  await postForm(stack, {
    payload: JSON.stringify(buttonPress({ ...posted, cardTs: card.ts, user: ADMIN, actionId: APPROVE_ACTION, value })),
  });
  await eventually(() => runsOf(threadId).length === 2, 30_000, 'second run');
  const second = await stack.cloud.stepFunctions.waitForExecution(runsOf(threadId)[1]!.executionArn, 60_000);
  assert.equal(second.status, 'SUCCEEDED');
  assert.match(resultsIn(threadId).get(held.toolUseId)!.text, /needs-approval-then-ran/);
  await idle(threadId);
  const approved = await auditOf(second.name);
  assert.deepEqual(
    (approved.hooks ?? []).map((h) => h.outcome),
    ['approval'],
    'the hook ran once, not again after the approval',
  );
  assert.equal(approved.toolCalls[0]!.approval?.outcome, 'approved');
});

test('lambda hooks: UserPromptSubmit adds context the model reads; an undeclared function and a timeout are errors that do not block, unless failClosed', async () => {
  await settings(
    [],
    [
      { event: 'UserPromptSubmit', lambda: POLICY_ARN },
      { event: 'UserPromptSubmit', lambda: UNDECLARED_ARN },
      { event: 'UserPromptSubmit', lambda: SLOW_ARN, timeoutSeconds: 1 },
    ],
  );
  const open = await runOf('hooks-lambda-open', [{ text: 'bonjour' }]);
  assert.equal(open.ended.status, 'SUCCEEDED');
  const seen = stack.bedrock.requests.filter((r) => JSON.stringify(r.body.messages).includes('hooks-lambda-open'));
  assert.match(JSON.stringify(seen[0]!.body.messages), /\[context from a UserPromptSubmit hook\]\\nhouse-rule-7: answer in French/);
  assert.doesNotMatch(JSON.stringify(seen[0]!.body.messages), /too late/);
  assert.ok(
    policyEvents.some((e) => e.event === 'UserPromptSubmit' && e.prompt?.includes('hooks-lambda-open') && e.runId === open.ended.name),
  );
  // The undeclared function was never invoked: refused before any call (and the role may not invoke it).
  assert.ok(!stack.cloud.operatorFunctions.invocations.some((i) => i.arn === UNDECLARED_ARN));
  const audit = await auditOf(open.ended.name);
  assert.deepEqual(
    (audit.hooks ?? []).map((h) => [h.target, h.outcome]),
    [
      [POLICY_ARN, 'changed'],
      [UNDECLARED_ARN, 'error'],
      [SLOW_ARN, 'timeout'],
    ],
  );
  assert.match(audit.hooks![1]!.problem!, /not declared in cdk\.json context hookFunctions/);

  await settings([], [{ event: 'UserPromptSubmit', lambda: SLOW_ARN, timeoutSeconds: 1, failClosed: true }]);
  const modelCalls = stack.bedrock.requests.length;
  const closed = await runOf('hooks-lambda-closed', [{ text: 'never asked' }]);
  assert.equal(closed.ended.status, 'SUCCEEDED');
  // Not even with the prompt withheld: a blocked prompt's run goes from Prepare to its end.
  assert.equal(stack.bedrock.requests.length, modelCalls, 'the model was not called for a blocked prompt');
  const said = stack.slack.messages
    .thread(closed.posted.channel, closed.posted.threadTs)
    .map((m) => m.text ?? '')
    .join('\n');
  assert.match(
    said,
    /not given to the agent: a hook blocked it\. a UserPromptSubmit hook failed \(it timed out\) and is set to fail closed/,
  );
});
