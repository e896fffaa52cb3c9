// The console's and the stand-in pages' pure view code: what a message shows (mentions as the
// clients show them, buttons), the metric series and their sparklines, and the stand-in pages'
// times, mentions and streaming marks. (The console itself runs in test/e2e/console.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { slackMentionsAsNames, teamsTextAsShown, toolCallsOf } from '../src/console/view.ts';
import { metricSeries, sparklinePoints } from '../src/console/panels.ts';
import { buttonsOf } from '../src/slack/index.ts';
import { cardButtonsOf } from '../src/teams/index.ts';
import { createWorkspace, storeMessage } from '../src/slack/state.ts';
import { renderPage } from '../src/slack/page.ts';
import { renderTeamsPage } from '../src/teams/page.ts';
import { createTeamsState } from '../src/teams/state.ts';
import type { MetricPoint } from '../src/metrics.ts';

test('mentions read as the clients show them: Slack <@U1> and <@U1|name>, Teams <at>Name</at>', () => {
  const names = new Map([['U0ADA', 'ada']]);
  assert.equal(
    slackMentionsAsNames('<@U0ADA> and <@U0BOB|bob> and <@U0NOBODY>', (id) => names.get(id)),
    '@ada and @bob and @U0NOBODY',
  );
  assert.equal(teamsTextAsShown('<at>Threadwork</at> run &lt;this&gt;<br>now'), '@Threadwork run <this>\nnow');
});

test("a Slack message's buttons come from its actions blocks; a Teams card's from its Action.Submit actions at any depth", () => {
  const blocks = [
    { type: 'section', text: { type: 'mrkdwn', text: 'Approval needed' } },
    {
      type: 'actions',
      block_id: 'b1',
      elements: [
        { type: 'button', action_id: 'approve-tool-call', value: 'rec-1', style: 'primary', text: { type: 'plain_text', text: 'Approve' } },
        { type: 'button', action_id: 'deny-tool-call', value: 'rec-1', text: { type: 'plain_text', text: 'Deny' } },
      ],
    },
  ];
  assert.deepEqual(buttonsOf(JSON.stringify(blocks)), [
    { actionId: 'approve-tool-call', label: 'Approve', value: 'rec-1', blockId: 'b1', style: 'primary' },
    { actionId: 'deny-tool-call', label: 'Deny', value: 'rec-1', blockId: 'b1' },
  ]);
  assert.deepEqual(buttonsOf(undefined), []);
  const card = {
    contentType: 'application/vnd.microsoft.card.adaptive',
    content: {
      type: 'AdaptiveCard',
      body: [
        { type: 'TextBlock', text: 'Approval needed' },
        {
          type: 'ActionSet',
          actions: [{ type: 'Action.Submit', title: 'Approve', data: { actionId: 'approve-tool-call', value: 'rec-1' } }],
        },
      ],
      actions: [
        { type: 'Action.Submit', title: 'Deny', data: { actionId: 'deny-tool-call', value: 'rec-1' } },
        { type: 'Action.OpenUrl', title: 'Docs' },
      ],
    },
  };
  assert.deepEqual(
    cardButtonsOf([card]).map((b) => [b.title, b.data.actionId, b.data.value]),
    [
      ['Approve', 'approve-tool-call', 'rec-1'],
      ['Deny', 'deny-tool-call', 'rec-1'],
    ],
  );
});

test("a context's tool calls pair each input with its result", () => {
  const jsonl = [
    JSON.stringify({ role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'bash', input: { command: 'echo hi' } } }] }),
    'not json',
    JSON.stringify({ role: 'user', content: [{ toolResult: { toolUseId: 't1', status: 'error', content: [{ text: 'exit 1' }] } }] }),
  ].join('\n');
  assert.deepEqual(toolCallsOf(jsonl), [
    { id: 't1', name: 'bash', input: '{\n  "command": "echo hi"\n}', result: 'exit 1', status: 'error' },
  ]);
});

test('the metric series: the last hour per minute, every point in its total whatever its dimensions, older points left out; the sparkline spans the box', () => {
  const now = Date.UTC(2026, 10, 27, 12, 30, 10);
  const point = (name: string, value: number, minutesAgo: number, dimensions: Record<string, string> = {}): MetricPoint => ({
    namespace: 'Threadwork',
    name,
    unit: 'Count',
    value,
    dimensions,
    at: now - minutesAgo * 60_000,
    functionId: 'Fn',
  });
  const series = metricSeries(
    [
      point('RunsStarted', 1, 0),
      point('RunsStarted', 2, 0),
      point('RunsStarted', 1, 5),
      point('RunsStarted', 9, 61),
      point('RunsStarted', 4, 0, { Channel: 'c' }),
    ],
    now,
  );
  assert.equal(series.length, 1);
  assert.equal(series[0]!.total, 8);
  assert.equal(series[0]!.perMinute.length, 60);
  assert.equal(series[0]!.perMinute[59], 7);
  assert.equal(series[0]!.perMinute[54], 1);
  assert.equal(sparklinePoints([0, 3, 1.5], 100, 30), '0,30 50,0 100,15');
  assert.equal(sparklinePoints([0, 0], 100, 30), '0,30 100,30', 'a flat line when nothing happened');
  assert.equal(sparklinePoints([], 100, 30), '');
});

test('the Slack stand-in page: mentions as @name, times for the browser to show in its zone, a streaming reply marked', () => {
  const workspace = createWorkspace({ teamId: 'T1', appId: 'A1', botUserId: 'U0BOT', botId: 'B1', botName: 'bot' });
  const top = storeMessage(workspace, 'C0LOCAL', { text: '<@U0BOT> hello <@U0LOCALUSER>', user: 'U0LOCALUSER' }, 'user');
  const reply = storeMessage(workspace, 'C0LOCAL', { text: 'piece one', thread_ts: top.ts }, 'chat.startStream');
  reply.local.stream = { state: 'streaming', appends: [{ method: 'chat.appendStream', text: 'piece one', chunks: [], at: Date.now() }] };
  const html = renderPage(workspace, undefined);
  assert.match(html, /@bot hello @local-user/);
  assert.match(html, new RegExp(`<time datetime="${new Date(top.local.createdAt).toISOString()}">`));
  assert.match(html, /toLocaleTimeString/);
  assert.match(html, /streaming… 1 pieces/);
});

test('the Teams stand-in page: mentions as @name, times, a streamed reply marked until its final message', () => {
  const state = createTeamsState();
  const at = '2026-11-27T10:00:00.000Z';
  state.add({
    id: '1',
    type: 'message',
    conversationId: 'a:1',
    from: { id: '29:1local-user', name: 'Local User' },
    text: '<at>Threadwork</at> hi',
    edits: 0,
    deleted: false,
    timestamp: at,
  });
  const streamed = state.add({
    id: '2',
    type: 'message',
    conversationId: 'a:1',
    from: { id: '28:bot' },
    text: 'half',
    edits: 0,
    deleted: false,
    timestamp: at,
    stream: { startedAt: 0, sequence: 2, updates: 1, final: false },
  });
  assert.match(renderTeamsPage(state, undefined), /@Threadwork hi/);
  assert.match(renderTeamsPage(state, undefined), new RegExp(`<time datetime="${at}">`));
  assert.match(renderTeamsPage(state, undefined), /streaming… 2 pieces/);
  streamed.stream!.final = true;
  assert.match(renderTeamsPage(state, undefined), /streamed in 2 pieces/);
});
