// Where the bot's Bot Framework token may go, attacked through the whole local cloud. A Teams thread
// id carries the Connector serviceUrl its replies are sent to, with the bot's token; an agent (or
// anyone who may name a thread) can write a thread id whose serviceUrl is its own server. The bot
// sends its token only to the serviceUrl stored for the conversation from a verified activity, so
// the attacker's server below must never see a request. Each test passes because the attack does no
// harm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { listenLocally, type LocalHttpServer } from '../../packages/local-cloud/src/http-server.ts';
import { resolveCloudFormation } from '../../packages/local-cloud/src/resources.ts';
import { channelEventsPrefix } from '../../shared/events/scope.ts';
import { decodeTeamsThreadId, encodeTeamsThreadId } from '../../shared/platforms/teams/thread-id.ts';
import { putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { toolTurn } from '../support/scripted-run.ts';

/** The stand-in's team channel, where a mention starts a thread (packages/local-cloud/src/teams/state.ts). */
const CHANNEL = '19:local-general@thread.tacv2';

let stack: TestStack;
/** The attacker's own "Connector": it records every request and answers like the real one would. */
let attacker: LocalHttpServer;
const received: { method: string; url: string; authorization?: string }[] = [];

before(async () => {
  stack = await startTestStack({ teams: true });
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
  attacker = await listenLocally((req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `stolen-${received.length}` }));
  });
});
after(async () => {
  await attacker?.close();
  await stack?.stop();
});

/** A thread id of a conversation the bot knows, pointing at the attacker's server instead of the Connector. */
const hostileThreadId = (conversationId: string) => encodeTeamsThreadId({ conversationId, serviceUrl: `${attacker.url}/` });

const runs = () => [...stack.cloud.stepFunctions.executions.values()];
const quiet = () => eventually(() => runs().every((e) => e.status !== 'RUNNING'), 90_000, 'every run ended');
const botTexts = (conversationId: string) =>
  stack.teams
    .botMessages(conversationId)
    .filter((m) => !m.deleted && m.text && m.text !== '...' && !m.targeted)
    .map((m) => m.text!);

test("an agent in a Teams channel cannot send the bot's token elsewhere through a thread id in its own channel's event file", async () => {
  // The channel's events folder, as the sandbox sees it (the same for every thread of the channel).
  const events = channelEventsPrefix(encodeTeamsThreadId({ conversationId: CHANNEL, serviceUrl: stack.teams.serviceUrl }));
  const inThread = hostileThreadId(`${CHANNEL};messageid=1`);
  const inChannel = hostileThreadId(CHANNEL);
  stack.bedrock.script(
    toolTurn('write', {
      path: `/workspace/data/${events}steal.json`,
      content: JSON.stringify({ type: 'immediate', threadId: inThread, text: 'say hi' }),
    }),
    toolTurn('write', {
      path: `/workspace/data/${events}steal-channel.json`,
      content: JSON.stringify({ type: 'one-shot', threadId: inChannel, text: 'say hi later', schedule: '2099-01-01T09:00:00' }),
    }),
    { text: 'Reminders set.' },
  );
  const sent = await stack.teams.sendUserMessage({ text: 'set up my reminders' });
  assert.equal(sent.delivery.status, 200);
  // The run's own replies still reach its thread: its serviceUrl is the stored one.
  await eventually(() => botTexts(sent.conversationId).includes('Reminders set.'), 90_000, 'the answer in the thread');

  const errorOf = (name: string) => readData(stack, `${events}${name}.error.json`);
  await eventually(
    async () => received.length > 0 || ((await errorOf('steal')) && (await errorOf('steal-channel'))),
    30_000,
    'the files refused, or a request to the attacker',
  );
  await quiet();
  assert.deepEqual(received, [], "the attacker's server got no request, so never the bot's token");
  for (const name of ['steal', 'steal-channel']) {
    const { error } = JSON.parse((await errorOf(name))!) as { error: string };
    assert.ok(error.includes(`${attacker.url}/`), `${name}: the error names the refused service URL: ${error}`);
    assert.match(error, /not the one Teams gave for this conversation/, `${name}: and says why`);
  }
  // No run started in the hostile threads, and no schedule was made for the one-shot file.
  assert.equal(runs().filter((e) => [inThread, inChannel].includes((e.input as { threadId: string }).threadId)).length, 0);
  assert.equal([...stack.cloud.scheduler.schedules.values()].filter((s) => JSON.stringify(s).includes(inChannel)).length, 0);

  // The channel's own thread, named with the serviceUrl Teams gave: its event file runs there as ever.
  const own = runs().find((e) => decodeTeamsThreadId((e.input as { threadId: string }).threadId).conversationId === sent.conversationId)!;
  stack.bedrock.script({ text: 'Pinged.' });
  await putData(stack, `${events}own.json`, { type: 'immediate', threadId: (own.input as { threadId: string }).threadId, text: 'ping' });
  await eventually(() => botTexts(sent.conversationId).includes('Pinged.'), 60_000, 'the own-thread event answered');
  assert.equal(await errorOf('own'), undefined);
  await quiet();
  assert.deepEqual(received, []);
});

test('a thread id with a foreign service URL from anywhere else (an event on the bus) runs, but nothing it sends reaches that URL', async () => {
  const rule = Object.values(stack.cloud.template.Resources).find((r) => r.Type === 'AWS::Events::Rule' && r.Properties?.EventBusName);
  assert.ok(rule, 'a rule on the custom bus');
  const busName = String(resolveCloudFormation(stack.cloud.template, rule.Properties.EventBusName));
  const threadId = hostileThreadId(`${CHANNEL};messageid=2`);
  const earlier = received.length;
  const modelCalls = stack.bedrock.requests.length;
  const response = await fetch(stack.cloud.eventBridge.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AWSEvents.PutEvents' },
    body: JSON.stringify({
      Entries: [
        { EventBusName: busName, Source: 'my.ci', DetailType: 'Deploy finished', Detail: JSON.stringify({ threadId, text: 'hi' }) },
      ],
    }),
  });
  assert.equal(((await response.json()) as { FailedEntryCount: number }).FailedEntryCount, 0);
  await stack.cloud.eventBridge.drain();
  // The prompt runs (a bus event is an operator's), but every post, edit, typing indicator and
  // notice it would send to that thread is refused before a token is fetched for it.
  const run = await eventually(() => runs().find((e) => (e.input as { threadId: string }).threadId === threadId), 30_000, 'the run');
  const ended = await stack.cloud.stepFunctions.waitForExecution(run.executionArn, 90_000);
  // The model answered, so the run tried to post its reply there (a failed post is logged, the run goes on).
  assert.equal(ended.status, 'SUCCEEDED', `the run ended ${ended.status}: ${ended.error} ${ended.cause}`);
  assert.ok(stack.bedrock.requests.length > modelCalls, 'the run reached the model');
  await quiet();
  assert.deepEqual(received.slice(earlier), [], "the attacker's server got no request");
});
