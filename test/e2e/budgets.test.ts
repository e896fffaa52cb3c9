// Budgets through the whole local cloud: a spent budget ends a run before its next model call and
// answers new prompts without one; racing threads overshoot by at most one step each; scheduled
// runs count against their own budget; the warning is posted once.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, beforeEach, test } from 'node:test';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { readSpend } from '../../shared/policy/budgets.ts';
import { spendKey, threadSpendKey } from '../../shared/table.ts';
import { createManualClock } from '../../packages/local-cloud/src/scheduler/clock.ts';
import type { RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { inboxDepth } from '../support/inbox.ts';
import { postForm, recordedSlashCommand } from '../support/slack-forms.ts';

// The scheduler's clock is manual (periodic events fire when a test advances it).
const clock = createManualClock(Date.now());
let stack: TestStack;
before(async () => {
  stack = await startTestStack({ clock });
});
after(async () => {
  await stack?.stop();
});

// $10 per million input tokens and $100 per million output: 2000 in + 500 out = $0.07 a step.
const PRICES = { [DEFAULT_SETTINGS.modelId]: { input: 10, output: 100, cacheRead: 1, cacheWrite: 12.5 } };
const STEP_USAGE = { inputTokens: 2000, outputTokens: 500 };
const STEP_USD = 0.07;

async function putSettings(settings: Record<string, unknown>) {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'settings.json',
      Body: JSON.stringify({ sandbox: { startEarly: false }, prices: PRICES, ...settings }),
    }),
  );
}
const db = () => ({ db: documentClient(stack.cloud.clients.dynamodb), tableName: stack.cloud.names.table });
/** What the bot said in the thread: its posts, and what it showed one person only (a refused prompt). */
const botTexts = (channel: string, ts: string) => [
  ...stack.slack.messages
    .thread(channel, ts)
    .filter((m) => m.bot_id && m.text !== '...' && !m.blocks?.length)
    .map((m) => m.text ?? ''),
  ...stack.slack.ephemeral.filter((m) => m.channel === channel && m.thread_ts === ts).map((m) => m.text ?? ''),
];
const modelCallsMentioning = (text: string) => stack.bedrock.requests.filter((r) => JSON.stringify(r.body.messages).includes(text)).length;
/** A tool call the agent-step runs itself (no sandbox needed), so the run goes on to another model step. */
const searchTurn = (id: string) => ({
  toolUses: [{ toolUseId: `tu-${id}`, name: 'search_channel', input: { query: 'anything' } }],
  usage: STEP_USAGE,
});
/** Nothing left in the inbox (a redelivery could still start a run) and no run going. */
const allRunsEnded = () =>
  eventually(
    async () => (await inboxDepth(stack)) === 0 && [...stack.cloud.stepFunctions.executions.values()].every((e) => e.status !== 'RUNNING'),
    60_000,
    'all runs ended',
  );

beforeEach(async () => {
  await allRunsEnded();
});

test('a channel budget spent mid-run ends the run before its next model call, with a message naming it; the warning comes once; the next prompt is answered without a model call', async () => {
  await putSettings({ budgets: [{ scope: 'channel', match: 'slack:C0BUDGET', period: 'day', usd: 0.05, warnAt: 0.5 }] });
  // The second turn is never asked for: scoped to this thread, so no later run takes it.
  const here = (r: { body: unknown }) => JSON.stringify(r.body).includes('budget-mid');
  stack.bedrock.script({ ...searchTurn('mid'), takenBy: here }, { text: 'never said', usage: STEP_USAGE, takenBy: here });
  const posted = await stack.slack.postUserMessage({ channel: 'C0BUDGET', text: '<@U0LOCALBOT> budget-mid work hard' });
  const stopped = await eventually(
    () => botTexts(posted.channel, posted.threadTs).find((t) => t.startsWith("I've stopped:")),
    30_000,
    'the budget message',
  );
  assert.match(
    stopped,
    /the daily budget of \$0\.05 for channel slack:C0BUDGET is spent \(\$0\.07 so far\)\. It resets at \d{4}-\d\d-\d\d 00:00 UTC/,
  );
  assert.equal(modelCallsMentioning('budget-mid'), 1, 'the second step never reached the model');
  const warnings = botTexts(posted.channel, posted.threadTs).filter((t) => t.startsWith('Heads up'));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /\$0\.07 of the daily budget of \$0\.05 for channel slack:C0BUDGET is spent \(over 50 %\)/);
  assert.ok(!botTexts(posted.channel, posted.threadTs).includes('never said'));

  const channelToday = await readSpend(db(), spendKey('day', new Date(), 'channel', 'slack:C0BUDGET'));
  assert.equal(channelToday.spentUsd, STEP_USD);
  assert.equal(channelToday.reservedUsd, 0, 'the settled step gave its reservation back; the refused one reserved nothing');
  assert.equal(channelToday.inputTokens, 2000);

  await allRunsEnded();
  const before = stack.bedrock.requests.length;
  await stack.slack.postUserMessage({ channel: 'C0BUDGET', text: 'budget-next one more', threadTs: posted.threadTs });
  await eventually(
    () =>
      botTexts(posted.channel, posted.threadTs).some((t) =>
        t.startsWith("I didn't start on this: the daily budget of $0.05 for channel slack:C0BUDGET"),
      ),
    20_000,
    'the refusal',
  );
  assert.equal(stack.bedrock.requests.length, before, 'no model call');
  // Another channel is not under this budget.
  stack.bedrock.script({ text: 'elsewhere fine', usage: STEP_USAGE });
  const other = await stack.slack.postUserMessage({ channel: 'C0OTHER', text: '<@U0LOCALBOT> budget-other' });
  await eventually(() => botTexts(other.channel, other.threadTs).includes('elsewhere fine'), 60_000, 'the other channel answered');
});

test("a subagent's cost counts against the budgets of the run that started it: the parent is stopped by what its child spent", async () => {
  await putSettings({ budgets: [{ scope: 'channel', match: 'slack:C0SUBBUDGET', period: 'day', usd: 0.1 }] });
  const child = (r: RecordedRequest) => JSON.stringify(r.body.system).includes('You are a subagent');
  const here = (r: RecordedRequest) => JSON.stringify(r.body).includes('budget-child');
  stack.bedrock.script(
    {
      takenBy: (r) => here(r) && !child(r),
      toolUses: [{ toolUseId: 'tu-budget-child', name: 'subagent', input: { task: 'budget-child: add up the invoices' } }],
      usage: STEP_USAGE,
    },
    { takenBy: (r) => here(r) && child(r), text: 'The invoices add up to 42.', usage: STEP_USAGE },
    { takenBy: (r) => here(r) && !child(r), text: 'never said', usage: STEP_USAGE },
  );
  const posted = await stack.slack.postUserMessage({ channel: 'C0SUBBUDGET', text: '<@U0LOCALBOT> budget-child go' });
  // $0.07 by the parent's first step, $0.07 by its child's: the parent's next step finds the $0.10 spent.
  const stopped = await eventually(
    () => botTexts(posted.channel, posted.threadTs).find((t) => t.startsWith("I've stopped:")),
    60_000,
    'the budget message',
  );
  assert.match(stopped, /the daily budget of \$0\.10 for channel slack:C0SUBBUDGET is spent \(\$0\.14 so far\)/);
  assert.equal(stack.bedrock.requests.filter((r) => here(r) && child(r)).length, 1, 'the child made its call');
  assert.ok(!botTexts(posted.channel, posted.threadTs).includes('never said'));
  assert.ok(
    !botTexts(posted.channel, posted.threadTs).some((t) => t.includes('add up to 42')),
    "the child's answer is its parent's, not the thread's",
  );
  const today = await readSpend(db(), spendKey('day', new Date(), 'channel', 'slack:C0SUBBUDGET'));
  assert.ok(Math.abs(today.spentUsd - 2 * STEP_USD) < 1e-9, `spent $${today.spentUsd}`);
  assert.equal(today.reservedUsd, 0);
  await allRunsEnded();
});

test('twenty threads racing against one small budget: each overshoots by at most one step, and every one ends with the budget message', async () => {
  // All twenty in one channel may run at once (dispatch admits them concurrently): the channel's run
  // limit (10 by default, test/e2e/capacity.test.ts) must not answer before the budget does.
  await putSettings({
    budgets: [{ scope: 'adapter', match: 'slack', period: 'month', usd: 0.1 }],
    limits: { maxConcurrentRunsPerChannel: 20 },
  });
  const monthBefore = await readSpend(db(), spendKey('month', new Date(), 'adapter', 'slack'));
  // Every call asks for a tool, so without a budget each run would go on for maxModelSteps.
  stack.bedrock.setDefault((req) => searchTurn(`race-${req.time}-${Math.random()}`));
  try {
    const posted = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stack.slack.postUserMessage({ channel: 'C0RACE', text: `<@U0LOCALBOT> race-${i} go` })),
    );
    await eventually(
      () =>
        posted.every((p) =>
          botTexts(p.channel, p.threadTs).some((t) => /^(I've stopped|I didn't start on this): the monthly budget/.test(t)),
        ),
      120_000,
      'every thread told',
    );
    await allRunsEnded();
    for (let i = 0; i < 20; i++) {
      assert.ok(
        modelCallsMentioning(`race-${i} go`) <= 1 + Math.ceil(monthBefore.spentUsd / STEP_USD),
        `thread ${i}: at most one step past the budget`,
      );
    }
    const month = await readSpend(db(), spendKey('month', new Date(), 'adapter', 'slack'));
    const steps = month.steps - monthBefore.steps;
    assert.ok(steps >= 1 && steps <= 20, `${steps} steps were paid for`);
    assert.ok(month.spentUsd <= 0.1 + 20 * STEP_USD + 1e-9, `overshoot bounded: $${month.spentUsd}`);
    assert.equal(month.reservedUsd, 0, 'every reservation was settled');
  } finally {
    stack.bedrock.setDefault(() => ({ text: 'ok' }));
  }
});

test('scheduled and heartbeat runs count, against a budget of their own, and people are not held by it', async () => {
  await putSettings({ budgets: [{ scope: 'deployment', period: 'day', trigger: 'schedule', usd: 0.1 }] });
  stack.bedrock.script({ text: 'thread open', usage: STEP_USAGE });
  const posted = await stack.slack.postUserMessage({ channel: 'C0SCHED', text: '<@U0LOCALBOT> sched-open' });
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('thread open'), 60_000, 'the thread');
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const scheduleKey = spendKey('day', new Date(), 'deployment', '*', 'schedule');
  const drop = async (name: string, body: Record<string, unknown>) => {
    await stack.cloud.clients.s3.send(
      new PutObjectCommand({
        Bucket: stack.cloud.names.bucket,
        Key: `events/${name}`,
        Body: JSON.stringify({ type: 'immediate', threadId, ...body }),
      }),
    );
    await stack.cloud.s3Notifications.poll();
  };
  await allRunsEnded();
  stack.bedrock.script({ text: 'scheduled answer', usage: STEP_USAGE });
  await drop('sched-1.json', { text: 'sched-event one' });
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('scheduled answer'), 30_000, 'the scheduled run');
  await allRunsEnded();
  stack.bedrock.script({ text: 'The build is red: I looked.', usage: STEP_USAGE });
  await drop('sched-2.json', { type: 'periodic', heartbeat: true, text: 'sched-heartbeat two', schedule: '*/30 * * * *', timezone: 'UTC' });
  await stack.cloud.scheduler.advance(30 * 60_000);
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('The build is red: I looked.'), 30_000, 'the heartbeat run');
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'events/sched-2.json' }));
  await stack.cloud.s3Notifications.poll();
  await allRunsEnded();
  const counted = await readSpend(db(), scheduleKey);
  assert.equal(counted.steps, 2, 'both runs counted against the schedule budget');
  assert.ok(Math.abs(counted.spentUsd - 2 * STEP_USD) < 1e-9);

  // Spent ($0.14 of $0.10): the next scheduled run is refused, a person's message is not.
  const before = stack.bedrock.requests.length;
  await drop('sched-3.json', { text: 'sched-event three' });
  await eventually(
    () =>
      botTexts(posted.channel, posted.threadTs).some((t) =>
        /the daily budget of \$0\.10 for this deployment of scheduled runs is spent/.test(t),
      ),
    30_000,
    'the scheduled run refused',
  );
  assert.equal(stack.bedrock.requests.length, before);
  stack.bedrock.script({ text: 'people still answered', usage: STEP_USAGE });
  await stack.slack.postUserMessage({ channel: 'C0SCHED', text: 'sched-person', threadTs: posted.threadTs });
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('people still answered'), 30_000, 'the person answered');
  await allRunsEnded();
  const thread = await readSpend(db(), threadSpendKey(threadId));
  assert.equal(thread.steps, 4, 'the thread counts every paid step, whoever asked');
});

test('usage, in a thread and as /usage: the thread, the channel today and this month, and each budget that applies with what is left', async () => {
  await putSettings({
    budgets: [
      { scope: 'channel', period: 'month', usd: 20 },
      { scope: 'user', match: 'slack:U0SOMEONEELSE', period: 'day', usd: 1 },
    ],
  });
  stack.bedrock.script({ text: 'first', usage: { inputTokens: 1200, outputTokens: 300, cacheReadInputTokens: 15_000 } });
  const posted = await stack.slack.postUserMessage({ channel: 'C0USAGE', text: '<@U0LOCALBOT> usage-start' });
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('first'), 60_000, 'the first answer');
  await allRunsEnded();
  const before = stack.bedrock.requests.length;
  await stack.slack.postUserMessage({ channel: 'C0USAGE', text: 'usage', threadTs: posted.threadTs });
  const report = await eventually(
    () => botTexts(posted.channel, posted.threadTs).find((t) => t.startsWith('*Usage*')),
    20_000,
    'the report',
  );
  // 1200 × $10 + 300 × $100 + 15,000 × $1 per million = $0.057
  assert.equal(
    report,
    [
      '*Usage*',
      '• This thread: $0.057 (1 model call; 1.2k tokens in, 300 out, 15k from cache)',
      '• This channel today (UTC): $0.057 (1 model call; 1.2k tokens in, 300 out, 15k from cache)',
      '• This channel this month: $0.057 (1 model call; 1.2k tokens in, 300 out, 15k from cache)',
      '*Budgets that apply here*',
      `• The monthly budget of $20.00 for each channel (here slack:C0USAGE): $0.057 spent, $19.94 left (resets ${nextMonth()} 00:00 UTC)`,
    ].join('\n'),
  );
  assert.equal(stack.bedrock.requests.length, before, 'usage is answered without the model');

  const recorded = recordedSlashCommand();
  const response = await postForm(stack, {
    ...recorded,
    team_id: 'T0LOCAL',
    channel_id: 'C0USAGE',
    user_id: 'U0LOCALUSER',
    command: '/usage',
    text: '',
  });
  assert.equal(response.status, 200);
  const slash = await eventually(
    () =>
      stack.slack.ephemeral.find(
        (m) => m.visibleTo === 'U0LOCALUSER' && m.channel === 'C0USAGE' && !m.thread_ts && m.text?.startsWith('*Usage*'),
      ),
    20_000,
    'the /usage answer',
  );
  assert.match(slash.text ?? '', /• This thread: \$0\.057[\s\S]*• This channel this month: \$0\.057[\s\S]*\$19\.94 left/);

  // `npm run chat` shows its user what only they see: the report answers `usage` there too.
  const cli = [
    '--import',
    'tsx',
    'packages/local-cloud/src/chat-cli.ts',
    '--channel',
    'C0USAGE',
    '--thread',
    posted.threadTs,
    '--timeout',
    '30',
    'usage',
  ];
  const { stdout } = await promisify(execFile)(process.execPath, cli, {
    env: { PATH: process.env.PATH, LOCAL_SLACK_URL: stack.slack.url },
  });
  assert.match(stdout, /> \(only you\) \*Usage\*\n• This thread: \$0\.057/);
});

function nextMonth(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
}

test("the event files a person's runs write are charged to that person's user budget; once it is spent their firings run nothing and start no thread", async () => {
  const user = 'U0ATTRIB';
  await putSettings({ budgets: [{ scope: 'user', period: 'day', usd: 1 }] });
  const personal = (r: RecordedRequest) => JSON.stringify(r.body.messages).includes('attrib-start');
  const write = (name: string, file: Record<string, unknown>) => ({
    toolUses: [
      {
        toolUseId: `tu-attrib-${name}`,
        name: 'write',
        input: { path: `/workspace/data/events/slack/C0ATTRIB/${name}.json`, content: JSON.stringify(file) },
      },
    ],
    usage: STEP_USAGE,
    takenBy: personal,
  });
  stack.bedrock.script(
    write('now', { type: 'immediate', text: 'attrib-now work' }),
    write('hourly', { type: 'periodic', text: 'attrib-hourly work', schedule: 'every 1h' }),
    { text: 'both scheduled', usage: STEP_USAGE, takenBy: personal },
    { text: 'attrib-now done', usage: STEP_USAGE, takenBy: (r) => JSON.stringify(r.body.messages).includes('attrib-now work') },
  );
  const posted = await stack.slack.postUserMessage({ channel: 'C0ATTRIB', user, text: '<@U0LOCALBOT> attrib-start' });
  await eventually(() => botTexts(posted.channel, posted.threadTs).includes('both scheduled'), 60_000, 'the person run');
  await stack.cloud.s3Notifications.poll();
  const started = await eventually(
    () => stack.slack.messages.channels.get('C0ATTRIB')?.find((m) => m.bot_id && m.text === 'attrib-now work'),
    30_000,
    'the immediate file started a thread',
  );
  await eventually(() => botTexts('C0ATTRIB', started.ts).includes('attrib-now done'), 30_000, 'the event run answered');
  await allRunsEnded();
  const userToday = () => readSpend(db(), spendKey('day', new Date(), 'user', `slack:${user}`));
  assert.equal((await userToday()).steps, 4, "the person's three steps and the event file's run's one");

  // $0.28 spent of $0.20: the person is refused, and so is every firing of the files their runs wrote.
  await putSettings({ budgets: [{ scope: 'user', period: 'day', usd: 0.2 }] });
  const threadsBefore = (stack.slack.messages.channels.get('C0ATTRIB') ?? []).filter((m) => m.bot_id && !m.thread_ts).length;
  const firingsBefore = stack.cloud.scheduler.firings.length;
  // The person's own run wrote the text (in its tool call): only a new model call would be the firing's.
  const sawBefore = modelCallsMentioning('attrib-hourly work');
  await stack.cloud.scheduler.advance(61 * 60_000);
  assert.ok(stack.cloud.scheduler.firings.length > firingsBefore, 'the periodic file fired');
  await allRunsEnded();
  assert.equal(modelCallsMentioning('attrib-hourly work'), sawBefore, 'its run never reached the model');
  assert.equal(
    (stack.slack.messages.channels.get('C0ATTRIB') ?? []).filter((m) => m.bot_id && !m.thread_ts).length,
    threadsBefore,
    'no thread was started for a firing the budget refuses',
  );
  assert.equal((await userToday()).steps, 4);
  await stack.cloud.clients.s3.send(
    new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'events/slack/C0ATTRIB/hourly.json' }),
  );
  await stack.cloud.s3Notifications.poll();
});
