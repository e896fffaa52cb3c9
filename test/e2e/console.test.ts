// The local console in a real browser (Debian's chromium, driven by Playwright): a person picks a
// user, types a message and sends it; the thread appears, the agent's tool call shows with its input
// and result, and the reply streams in. The stack behind it is the whole local cloud.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { consoleSources, startConsole, type LocalConsole } from '../../packages/local-cloud/src/console/index.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';

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

test('the console: a message posted there shows the tool call, with its input and result, and the reply streaming in', async () => {
  // A line at a time: the Slack adapter streams whole lines.
  const reply = Array.from({ length: 30 }, (_, i) => `piece ${i + 1} of the answer.\n`);
  // The model pauses after twelve pieces: the reply is seen unfinished, then whole.
  const held = gate();
  stack.bedrock.script(
    { toolUses: [{ name: 'search_channel', input: { query: 'deploy notes', limit: 5 } }] },
    { text: reply, hold: held.promise, holdAfterDeltas: 12 },
  );
  const page = await browser.newPage();
  try {
    const refused: string[] = [];
    page.on('dialog', (dialog) => {
      refused.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(localConsole.url);
    await page.locator('#users option').first().waitFor({ state: 'attached' });
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

test('the console refuses a malformed post with the reason, and posts nothing', async () => {
  const before = stack.slack.messages.all().length;
  const answer = await fetch(`${localConsole.url}/post`, {
    method: 'POST',
    body: JSON.stringify({ user: 'nobody', channel: 'C0LOCAL', text: '' }),
  });
  assert.equal(answer.status, 400);
  assert.match(await answer.text(), /user: .*text: /s);
  assert.equal(stack.slack.messages.all().length, before);
});
