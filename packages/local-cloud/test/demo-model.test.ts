// The local demo model behind the Bedrock stand-in, through a real Bedrock client over ConverseStream:
// messages as the Slack adapter hands them to the runtime (plain text: a code block's fences gone),
// the system prompt the runtime builds, the tool configuration of the built-in tools.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BedrockRuntimeClient, ConverseStreamCommand, type ConverseStreamOutput, type Message } from '@aws-sdk/client-bedrock-runtime';
import { toPlainText } from 'chat';
import { SlackFormatConverter } from '@chat-adapter/slack';
import { startBedrockFake, type BedrockFake } from '../src/bedrock.ts';
import { DEMO_HELP, demoModel } from '../src/demo-model.ts';
import { buildSystemPrompt } from '../../../shared/context/system-prompt.ts';
import { contextText } from '../../../shared/context/context-text.ts';
import { workspaceLayout } from '../../../shared/sandbox/workspace.ts';

const THREAD = 'slack:C0LOCAL:1795765044.260412';
const NOW = new Date('2026-11-27T08:00:00.000Z');
const system = buildSystemPrompt({ threadId: THREAD, runId: 'run-1', now: NOW, workspace: workspaceLayout(THREAD) });
const tools = ['bash', 'read', 'write', 'edit', 'upload'].map((name) => ({
  toolSpec: { name, description: name, inputSchema: { json: { type: 'object' } } },
}));

let fake: BedrockFake;
let client: BedrockRuntimeClient;
before(async () => {
  fake = await startBedrockFake();
  fake.setDefault(demoModel(() => new Date(0)));
  client = new BedrockRuntimeClient({
    endpoint: fake.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
  });
});
after(async () => {
  client.destroy();
  await fake.close();
});

/** What a person typed in Slack, as the model sees it (plain text, as the Slack adapter makes it, in context form). */
const fromSlack = (typed: string) => contextText('Ada', toPlainText(new SlackFormatConverter().toAst(`<@U0LOCALBOT> ${typed}`)));

async function converse(messages: Message[], offered = tools) {
  const response = await client.send(
    new ConverseStreamCommand({ modelId: 'demo', system, messages, toolConfig: offered.length ? { tools: offered } : undefined }),
  );
  const events: ConverseStreamOutput[] = [];
  for await (const event of response.stream!) events.push(event);
  const deltas = events.flatMap((e) => (e.contentBlockDelta?.delta?.text ? [e.contentBlockDelta.delta.text] : []));
  const toolUse = events.find((e) => e.contentBlockStart?.start?.toolUse)?.contentBlockStart?.start?.toolUse;
  const input = events.map((e) => e.contentBlockDelta?.delta?.toolUse?.input ?? '').join('');
  return {
    text: deltas.join(''),
    deltas,
    tool: toolUse && { name: toolUse.name, id: toolUse.toolUseId, input: JSON.parse(input) as unknown },
  };
}

const said = (text: string): Message => ({ role: 'user', content: [{ text }] });

test('a shell block in a message is run with bash, and the output is reported back', async () => {
  for (const typed of ['run this: ```sh\necho hi\n```', 'run this:\n```\necho hi\n```']) {
    const asked = await converse([said(fromSlack(typed))]);
    assert.deepEqual(
      asked.tool && { name: asked.tool.name, input: asked.tool.input },
      { name: 'bash', input: { command: 'echo hi' } },
      typed,
    );
  }
  const asked = await converse([said(fromSlack('run this: ```sh\necho hi\n```'))]);
  const reported = await converse([
    said(fromSlack('run this: ```sh\necho hi\n```')),
    {
      role: 'assistant',
      content: [{ text: asked.text }, { toolUse: { toolUseId: asked.tool!.id, name: 'bash', input: { command: 'echo hi' } } }],
    },
    { role: 'user', content: [{ toolResult: { toolUseId: asked.tool!.id, content: [{ text: 'hi\n' }], status: 'success' } }] },
  ]);
  assert.equal(reported.tool, undefined);
  assert.match(reported.text, /^I ran `echo hi`\. Its output:\n```\nhi\n```$/);
  assert.ok(reported.deltas.length > 3, 'streamed in several pieces');
});

test('create, read and upload a file; a failed tool call is reported as failed', async () => {
  const created = await converse([said(fromSlack('create notes.txt with buy milk'))]);
  assert.deepEqual(created.tool?.input, { path: 'notes.txt', content: 'buy milk\n' });
  assert.equal(created.tool?.name, 'write');
  const read = await converse([said(fromSlack('read notes.txt'))]);
  assert.deepEqual([read.tool?.name, read.tool?.input], ['read', { path: 'notes.txt' }]);
  const upload = await converse([said(fromSlack('upload notes.txt'))]);
  assert.deepEqual([upload.tool?.name, upload.tool?.input], ['upload', { path: 'notes.txt' }]);
  const failed = await converse([
    said(fromSlack('read missing.txt')),
    { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'read', input: { path: 'missing.txt' } } }] },
    { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'no such file: missing.txt' }], status: 'error' } }] },
  ]);
  assert.match(failed.text, /^The read call failed:\n```\nno such file: missing.txt\n```$/);
});

test("'remind me in N minutes' writes a one-shot event file for this thread into the channel's events folder", async () => {
  const asked = await converse([said(fromSlack('remind me in 5 minutes to stretch'))]);
  assert.equal(asked.tool?.name, 'write');
  const { path, content } = asked.tool!.input as { path: string; content: string };
  assert.equal(path, `/workspace/${workspaceLayout(THREAD).eventsPath.replace(/\/$/, '')}/reminder-${NOW.getTime()}.json`);
  assert.deepEqual(JSON.parse(content), {
    type: 'one-shot',
    threadId: THREAD,
    text: 'Reminder: stretch',
    schedule: '2026-11-27T08:05:00',
    timezone: 'UTC',
  });
  const reported = await converse([
    said(fromSlack('remind me in 5 minutes to stretch')),
    { role: 'assistant', content: [{ toolUse: { toolUseId: 't2', name: 'write', input: { path, content } } }] },
    { role: 'user', content: [{ toolResult: { toolUseId: 't2', content: [{ text: `wrote 120 bytes to ${path}` }], status: 'success' } }] },
  ]);
  assert.equal(reported.text, 'Reminder set: it fires at 2026-11-27 08:05:00 UTC.');
  // When it fires, its text comes back as a message.
  assert.equal((await converse([said('Reminder: stretch')])).text, '⏰ Reminder: stretch');
});

test('anything else gets what the demo model can do and how to switch to Bedrock, in pieces; no tool that is not offered', async () => {
  const other = await converse([said(fromSlack('what is a FIFO queue?'))]);
  assert.equal(other.text, DEMO_HELP);
  assert.match(other.text, /Amazon Bedrock/);
  assert.ok(other.deltas.length > 10);
  const noTools = await converse([said(fromSlack('read notes.txt'))], []);
  assert.equal(noTools.tool, undefined);
  assert.match(noTools.text, /would use the read tool/);
});
