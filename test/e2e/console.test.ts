// The local console in a real browser (Debian's chromium, driven by Playwright): a person picks a
// user, types a message and sends it; the thread appears, the agent's tool call shows with its input
// and result, and the reply streams in. The stack behind it is the whole local cloud.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { consoleSources, startConsole, type LocalConsole } from '../../packages/local-cloud/src/console/index.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { putData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { parseSettingsText } from '../../shared/settings/load.ts';

// .ci/run installs Debian's chromium; Playwright never downloads a browser of its own.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Chromium's background services reach for Google's hosts, which this network refuses.
const QUIET_CHROMIUM = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let stack: TestStack;
let localConsole: LocalConsole;
let browser: Browser;
before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: .ci/run installs Debian's chromium (or set CHROMIUM_PATH)`);
  stack = await startTestStack({ teams: true });
  localConsole = await startConsole(consoleSources({ slack: stack.slack, teams: stack.teams }, stack.cloud));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: QUIET_CHROMIUM });
});
after(async () => {
  await browser?.close();
  await localConsole?.close();
  await stack?.stop();
});

/** A page of the console, with every alert it shows (a refused post) collected. */
async function openConsole() {
  const page = await browser.newPage();
  const alerts: string[] = [];
  page.on('dialog', (dialog) => {
    alerts.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(localConsole.url);
  await page.locator('#users option').first().waitFor({ state: 'attached' });
  return { page, alerts };
}

test('the console: a message posted there shows the tool call, with its input and result, and the reply streaming in', async () => {
  // A line at a time: the Slack adapter streams whole lines.
  const reply = Array.from({ length: 30 }, (_, i) => `piece ${i + 1} of the answer.\n`);
  // The model pauses after twelve pieces: the reply is seen unfinished, then whole.
  const held = gate();
  stack.bedrock.script(
    { toolUses: [{ name: 'search_channel', input: { query: 'deploy notes', limit: 5 } }] },
    { text: reply, hold: held.promise, holdAfterDeltas: 12 },
  );
  const { page, alerts: refused } = await openConsole();
  try {
    await page.fill('#user', 'U0LOCALUSER');
    await page.fill('#text', 'what did we decide about deploys?');
    await page.click('button[type=submit]');

    const thread = page.locator('section.thread').filter({ hasText: 'what did we decide about deploys?' });
    await thread.waitFor({ timeout: 60_000 }).catch((error: Error) => {
      throw new Error(`${error.message}; the console said: ${refused.join(' | ') || 'nothing'}`);
    });
    // The tool call, folded: its name, then its input and result when opened.
    const tool = thread.locator('details.tool[data-tool="search_channel"]');
    await tool.waitFor({ timeout: 60_000 });
    await tool.locator('summary').click();
    const [input, result] = [tool.locator('pre').nth(0), tool.locator('pre').nth(1)];
    await result.waitFor({ timeout: 60_000 });
    assert.match((await input.textContent()) ?? '', /"query": "deploy notes"/);
    assert.match((await result.textContent()) ?? '', /deploy notes/);
    // The reply streams: seen unfinished (marked as streaming) before it is whole, while the tool
    // call a person opened stays open as the view changes.
    await thread.locator('pre.streaming').filter({ hasText: 'piece 5 of the answer.' }).waitFor({ timeout: 60_000 });
    assert.equal(await tool.getAttribute('open'), '');
    held.release();
    await thread.getByText('piece 30 of the answer.').waitFor({ timeout: 60_000 });
    await page.waitForFunction(() => !document.querySelector('section.thread pre.streaming'), undefined, { timeout: 60_000 });
    assert.match(
      (await thread.locator('.msg.bot pre').last().textContent()) ?? '',
      /^piece 1 of the answer\.\n[^]*piece 30 of the answer\.\s*$/,
    );
  } finally {
    await page.close();
  }
});

const ADMIN = 'U0LOCALUSER';

test('the console: a held bash call is approved with its Approve button; the side panels show the run and its cost, then its audit record, a metric chart, the budget left and an event file with its schedule', async () => {
  await putData(stack, 'settings.json', {
    sandbox: { startEarly: false },
    access: { admins: [`slack:${ADMIN}`] },
    approvals: [{ tool: 'bash', match: 'console-held', approvers: 'admins' }],
    budgets: [{ scope: 'deployment', period: 'day', usd: 5 }],
  });
  stack.bedrock.script({ toolUses: [{ name: 'bash', input: { command: 'echo console-held-ran' } }] }, { text: ['approved ', 'and done.'] });
  const { page, alerts } = await openConsole();
  try {
    await page.fill('#user', ADMIN);
    await page.selectOption('#where', JSON.stringify({ platform: 'slack', channel: 'C0LOCAL' }));
    await page.fill('#text', 'please run the held command');
    await page.click('button[type=submit]');
    const thread = page.locator('section.thread').filter({ hasText: 'please run the held command' });
    const approve = thread.locator('button.press', { hasText: 'Approve' });
    await approve.waitFor({ timeout: 60_000 }).catch((error: Error) => {
      throw new Error(`${error.message}; the console said: ${alerts.join(' | ') || 'nothing'}`);
    });
    assert.equal(await thread.locator('button.press', { hasText: 'Deny' }).count(), 1);
    // Waiting for the decision, the run is running, with what its first step cost.
    await page.locator('#runs', { hasText: '1 running' }).waitFor({ timeout: 30_000 });
    assert.match((await page.locator('#runs td.cost').first().textContent()) ?? '', /^\$\d+\.\d{4}$/);
    assert.equal(await thread.locator('details.tool[data-tool="bash"] pre.error').count(), 0);

    await approve.click();
    const bash = thread.locator('details.tool[data-tool="bash"]');
    await bash.locator('pre').nth(1).waitFor({ state: 'attached', timeout: 60_000 });
    assert.match((await bash.locator('pre').nth(1).textContent()) ?? '', /console-held-ran/);
    await thread.getByText('approved and done.').waitFor({ timeout: 60_000 });
    await thread.getByText(/Approved by local-user/).waitFor({ timeout: 30_000 });
    // The buttons go with the decision (the card is edited).
    await thread.locator('button.press').first().waitFor({ state: 'detached', timeout: 30_000 });

    // The panels: the run's audit record (its bash call ran, with its cost), a chart of the last
    // hour's metrics, and the deployment's budget with what is left.
    const threadId = (await thread.getAttribute('data-thread'))!;
    const audit = page.locator('#audit details.audit', { hasText: threadId });
    await audit.waitFor({ timeout: 60_000 });
    await audit.locator('summary').click();
    assert.match((await audit.textContent()) ?? '', /finished[^]*\$\d+\.\d{4}[^]*bash: ok/);
    await page.locator('#runs', { hasText: '0 running' }).waitFor({ timeout: 30_000 });
    const chart = page.locator('#metrics .metric svg polyline').first();
    await chart.waitFor({ state: 'attached', timeout: 30_000 });
    assert.match((await chart.getAttribute('points')) ?? '', /^[\d.]+,[\d.]+( [\d.]+,[\d.]+){59}$/, 'a point a minute for an hour');
    assert.match(
      (await page.locator('#budgets').textContent()) ?? '',
      /daily budget of \$5\.00 for this deployment: \$0\.\d+ of \$5\.00 spent, \$4\.\d+ left/,
    );
    // An event file dropped in the bucket, and the schedule it makes.
    const at = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19);
    await putData(stack, 'events/console-reminder.json', { type: 'one-shot', threadId, text: 'console reminder', schedule: at });
    await stack.cloud.s3Notifications.poll();
    await page.locator('#events .event-file', { hasText: 'events/console-reminder.json' }).waitFor({ timeout: 30_000 });
    await page.locator('#events .schedule', { hasText: `at(${at})` }).waitFor({ timeout: 30_000 });
  } finally {
    await page.close();
  }
});

test('the console: a Teams thread, posted as a chosen user, shows the mention as @name, the reply, and an Approve press as that user', async () => {
  await putData(stack, 'settings.json', {
    sandbox: { startEarly: false },
    approvals: [{ tool: 'bash', match: 'teams-held', approvers: 'requester' }],
  });
  stack.bedrock.script(
    { text: ['Hello Ada, ', 'this is ', 'the agent in Teams.'], toolUses: [{ name: 'bash', input: { command: 'echo teams-held-ran' } }] },
    { text: ['ran it ', 'for you.'] },
  );
  const { page } = await openConsole();
  try {
    await page.fill('#user', 'Ada Lovelace');
    await page.selectOption('#where', JSON.stringify({ platform: 'teams', kind: 'channel' }));
    await page.fill('#text', 'hello from the Teams side');
    await page.click('button[type=submit]');
    const thread = page.locator('section.thread[data-platform="teams"]').filter({ hasText: 'hello from the Teams side' });
    await thread.waitFor({ timeout: 60_000 });
    const first = thread.locator('.msg.user').first();
    assert.equal(await first.locator('b').textContent(), 'Ada Lovelace');
    assert.equal(await first.locator('pre').textContent(), '@Threadwork hello from the Teams side');
    await thread.locator('.msg.bot', { hasText: 'Hello Ada, this is the agent in Teams.' }).waitFor({ timeout: 60_000 });
    // The stand-in knows Ada now, as the author of the activity the bot received.
    const delivered = stack.teams.deliveries.find((d) => JSON.stringify(d.activity).includes('hello from the Teams side'))!;
    assert.equal((delivered.activity as { from: { name: string } }).from.name, 'Ada Lovelace');

    // The held call's card has Approve and Deny; Ada asked, so she may approve (approvers: requester).
    const approve = thread.locator('button.press', { hasText: 'Approve' });
    await approve.waitFor({ timeout: 60_000 });
    await approve.click();
    await thread.locator('.msg.bot', { hasText: 'ran it for you.' }).waitFor({ timeout: 60_000 });
    const bash = thread.locator('details.tool[data-tool="bash"]');
    await bash.locator('pre').nth(1).waitFor({ state: 'attached', timeout: 30_000 });
    assert.match((await bash.locator('pre').nth(1).textContent()) ?? '', /teams-held-ran/);
    const press = stack.teams.deliveries.find(
      (d) => (d.activity as { value?: { actionId?: string } }).value?.actionId === 'approve-tool-call',
    )!;
    assert.equal((press.activity as { from: { name: string } }).from.name, 'Ada Lovelace', 'pressed as the chosen user');
  } finally {
    await page.close();
  }
});

test("an invalid settings.json: the console shows its problems in the functions' words, and an admin (only) is told in the thread, once per version", async () => {
  const raw = JSON.stringify({ access: { admins: [`slack:${ADMIN}`] }, budgets: 'lots' });
  await putData(stack, 'settings.json', raw);
  const { page } = await openConsole();
  try {
    const banner = page.locator('#banner');
    await banner.waitFor({ state: 'visible', timeout: 30_000 });
    const expected = parseSettingsText(raw).problems;
    assert.ok(expected.length > 0);
    assert.deepEqual(await banner.locator('li').allTextContents(), expected);
  } finally {
    await page.close();
  }
  const toldTo = (user: string) => stack.slack.ephemeral.filter((m) => m.visibleTo === user && /settings\.json has problems/.test(m.text));
  const bystander = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hi from a bystander', user: 'U0BYSTANDER' });
  const asked = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hi from the admin', user: ADMIN });
  await eventually(() => toldTo(ADMIN).length === 1, 60_000, 'the admin told');
  assert.match(toldTo(ADMIN)[0]!.text, /budgets/);
  assert.equal(toldTo(ADMIN)[0]!.thread_ts, asked.threadTs);
  await stack.slack.postUserMessage({ text: 'and again', user: ADMIN, threadTs: asked.threadTs });
  // Both of the admin's messages were answered: the second was admitted without a second notice.
  await eventually(
    () => stack.slack.messages.thread(asked.channel, asked.threadTs).filter((m) => m.bot_id).length >= 2,
    60_000,
    'two replies',
  );
  assert.equal(toldTo(ADMIN).length, 1, 'once per version');
  assert.equal(toldTo('U0BYSTANDER').length, 0, 'not an admin');
  assert.ok(stack.slack.messages.thread(bystander.channel, bystander.threadTs).every((m) => !/settings\.json has problems/.test(m.text)));
});

test('the console refuses a malformed post with the reason, and posts nothing', async () => {
  const before = stack.slack.messages.all().length;
  const answer = await fetch(`${localConsole.url}/post`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: 'nobody', channel: 'C0LOCAL', text: '' }),
  });
  assert.equal(answer.status, 400);
  assert.match(await answer.text(), /user: .*text: /s);
  assert.equal(stack.slack.messages.all().length, before);
});

/** A raw request to the console, with whatever Host and Origin a browser elsewhere would send. */
function rawRequest(path: string, method: string, headers: Record<string, string>, body = '') {
  const url = new URL(path, localConsole.url);
  return new Promise<number>((resolve, reject) => {
    const sent = request(url, { method, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.destroy();
      resolve(response.statusCode ?? 0);
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

test('a web page elsewhere cannot drive the console: a cross-site post, a rebound Host and a post that is not JSON are refused, and nothing is posted', async () => {
  const before = stack.slack.messages.all().length;
  const port = new URL(localConsole.url).port;
  const body = JSON.stringify({ user: ADMIN, channel: 'C0LOCAL', text: 'run this from a web page' });
  // A form or a fetch from another site: a "simple" request, which the browser sends without asking first.
  assert.equal(await rawRequest('/post', 'POST', { 'content-type': 'text/plain', origin: 'http://evil.example' }, body), 403);
  // DNS rebinding: the page is same-origin with its own host name, which now points at this machine.
  const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}` };
  assert.equal(await rawRequest('/post', 'POST', { ...rebound, 'content-type': 'application/json' }, body), 403);
  assert.equal(await rawRequest('/events', 'GET', { host: rebound.host }), 403, 'nor can it read the threads');
  // A post that is not JSON needs no preflight from a browser: refused whoever sends it.
  assert.equal(await rawRequest('/press', 'POST', { 'content-type': 'text/plain' }, body), 415);
  assert.equal(stack.slack.messages.all().length, before, 'nothing was posted');
});

test("the console's Stop (as the chosen user) ends the thread's running run, as that user's `stop` would", async () => {
  const held = gate();
  stack.bedrock.script({ text: ['thinking about it'], hold: held.promise, holdAfterDeltas: 0 });
  const post = (path: string, body: unknown) =>
    fetch(`${localConsole.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const sent = (await (await post('/post', { user: ADMIN, channel: 'C0LOCAL', text: 'a long question to stop' })).json()) as {
    threadTs: string;
  };
  const threadId = `slack:C0LOCAL:${sent.threadTs}`;
  const execution = () =>
    [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId?: string }).threadId === threadId);
  await eventually(() => execution()?.status === 'RUNNING', 60_000, 'the run going');
  assert.equal((await post('/stop', { user: ADMIN, channel: 'C0LOCAL', threadTs: sent.threadTs })).status, 200);
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution()!.executionArn, 60_000);
  held.release();
  assert.equal(ended.status, 'ABORTED');
  assert.ok(
    stack.slack.messages.thread('C0LOCAL', sent.threadTs).some((m) => m.user === ADMIN && m.text === 'stop'),
    'stop, posted as that user',
  );
});
