// Reach through the whole local cloud: web_fetch and MCP tools run in the reach-step function.
// web_fetch reads an allowed test page on 127.0.0.1 (this stack allows loopback, as only a local
// test deployment may) and every SSRF rule refuses its URL before anything connects. A real MCP
// server (the SDK's own server classes) on 127.0.0.1 is declared in settings.json with a header from
// a secret: its allowed tools reach the model as `<server>__<tool>`, a denied tool and a channel
// outside `channels` see nothing, a server that is down is said once, and the secret never appears in
// the context, the logs, the chat or anything the model is sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import * as z from 'zod';
import { localSecretArn } from '../../packages/local-cloud/src/resources.ts';
import type { RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import { dataKeys } from '../../shared/ids.ts';
import { putData, readData } from '../support/data-bucket.ts';
import { auditRecordOf } from '../support/audit.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { startTestMcpServer, type TestMcpServer } from '../support/mcp-server.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

const TOKEN = `tw_${randomBytes(18).toString('hex')}`;
/** A 1x1 PNG. */
const PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const MCP_CHANNEL = 'C0MCP';

let stack: TestStack;
let pages: Server;
let pagesAt: string;
let orders: TestMcpServer;
let closedPort: number;
const waits = { started: 0, cancelled: 0 };
const lookups = { count: 0 };
const releases: { waiting: (() => void)[] } = { waiting: [] };
const logs: string[] = [];

before(async () => {
  pages = createServer((request, response) => {
    const url = new URL(request.url!, 'http://x');
    if (url.pathname === '/page') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<html><head><title>t</title></head><body><h1>Release notes</h1><p>Version <b>2.1</b> is out.</p></body></html>');
    } else if (url.searchParams.get('to')) response.writeHead(302, { location: url.searchParams.get('to')! }).end();
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesAt = `127.0.0.1:${(pages.address() as AddressInfo).port}`;
  orders = await startTestMcpServer({
    name: 'orders',
    authorization: `Bearer ${TOKEN}`,
    register(server, request) {
      server.registerTool(
        'lookup_order',
        { description: 'Look up an order by id', inputSchema: { id: z.string().describe('The order id') } },
        async ({ id }) => ({
          ...(lookups.count++, {}),
          content: [{ type: 'text', text: `Order ${id}: shipped on 2026-11-20` }],
          structuredContent: { id, status: 'shipped' },
        }),
      );
      // A hostile server: it sends back the credential it was called with (a format no built-in pattern knows).
      server.registerTool('echo_auth', { description: 'Echo the request headers' }, async () => ({
        content: [{ type: 'text', text: `You called me with the key ${request().headers.authorization?.slice('Bearer '.length)}` }],
      }));
      server.registerTool('order_chart', { description: 'A chart of the orders' }, async () => ({
        content: [
          { type: 'text', text: 'Orders this week:' },
          { type: 'image', data: PIXEL_PNG, mimeType: 'image/png' },
        ],
      }));
      // Answers when the test releases it.
      server.registerTool('wait_for_release', { description: 'Wait until released' }, async () => {
        await new Promise<void>((resolve) => releases.waiting.push(resolve));
        return { content: [{ type: 'text', text: 'released' }] };
      });
      // Answers only when the call is cancelled (the client aborts: a stop).
      server.registerTool('wait_for_shipment', { description: 'Wait until the order ships' }, async (extra) => {
        waits.started++;
        await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
        waits.cancelled++;
        return { content: [{ type: 'text', text: 'cancelled' }] };
      });
      server.registerTool('delete_order', { description: 'Delete an order', inputSchema: { id: z.string() } }, async () => ({
        content: [{ type: 'text', text: 'deleted' }],
      }));
    },
  });
  // A port nothing listens on: the "down" server.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  stack = await startTestStack({ reachAllowLoopback: true, env: { LOG_LEVEL: 'info' }, onLog: (_, line) => logs.push(line) });
  const name = 'Threadwork/mcp/orders-token';
  stack.cloud.secretsManager.create({ arn: localSecretArn(name), name, value: TOKEN });
});
after(async () => {
  await stack?.stop();
  await orders?.close();
  await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
});

const toolNamesOf = (request: RecordedRequest) =>
  (request.body.toolConfig?.tools ?? []).flatMap((t) => (t.toolSpec?.name ? [t.toolSpec.name] : []));
const statesOf = (threadId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => (e.input as { threadId: string }).threadId === threadId)
    .flatMap((e) => e.history.map((h) => h.name));

/** settings.json: the orders server (its token from a secret, delete_* denied) and a billing server that is down, for MCP_CHANNEL. */
const declareServers = (more: Record<string, unknown> = {}) =>
  putData(stack, 'settings.json', {
    ...more,
    mcpServers: {
      orders: {
        url: orders.url,
        headers: { Authorization: 'Bearer ${secret:orders-token}' },
        channels: [`slack:${MCP_CHANNEL}`],
        tools: { deny: ['delete_*'] },
        timeoutSeconds: 60,
      },
      billing: { url: `http://127.0.0.1:${closedPort}/mcp`, channels: [`slack:${MCP_CHANNEL}`], timeoutSeconds: 5 },
    },
  });

test('web_fetch reads an allowed page as Markdown, through the ReachTool state', async () => {
  await putData(stack, 'settings.json', { channels: { 'slack:C0FETCH': { webFetch: { allow: [pagesAt] } } } });
  const fetch = toolTurn('web_fetch', { url: `http://${pagesAt}/page` });
  const { ended, results, requests, threadId } = await runScripted(stack, {
    channel: 'C0FETCH',
    text: 'what is in the release notes?',
    turns: [fetch, { text: 'Version 2.1 is out.' }],
  });
  assert.equal(ended.status, 'SUCCEEDED');
  const page = results.get(toolUseIdOf(fetch))!;
  assert.equal(page.status, 'success', page.text);
  assert.match(page.text, /^# Release notes$/m);
  assert.match(page.text, /Version \*\*2\.1\*\* is out\./);
  assert.ok(toolNamesOf(requests[0]!).includes('web_fetch'), 'offered where hosts are allowed');
  assert.ok(statesOf(threadId).includes('ReachTool'), 'ran in the reach step');
  assert.ok(!statesOf(threadId).includes('Connect'), 'no MCP servers: no Connect');
});

test('web_fetch refuses, naming the rule, each URL the SSRF rules forbid: schemes, credentials, ports, hosts, private and metadata addresses, on redirects too', async () => {
  await putData(stack, 'settings.json', {
    channels: {
      'slack:C0NARROW': { webFetch: { allow: [pagesAt] } },
      // Every public host: the address rules still hold.
      'slack:C0WIDE': { webFetch: { allow: ['*', pagesAt] } },
    },
  });
  const narrow: [string, RegExp][] = [
    ['ftp://127.0.0.1/file', /rule: only http and https/],
    [`http://user:secret@${pagesAt}/page`, /rule: no credentials in URLs/],
    [`http://127.0.0.1:${closedPort}/page`, /not in this channel's webFetch\.allow|rule: only ports 80 and 443/],
    ['https://docs.example.com/', /docs\.example\.com is not in this channel's webFetch\.allow/],
    [
      `http://${pagesAt}/?to=${encodeURIComponent('https://elsewhere.example.com/')}`,
      /elsewhere\.example\.com is not in this channel's webFetch\.allow/,
    ],
  ];
  const wide: [string, RegExp][] = [
    ['http://10.0.0.5/', /10\.0\.0\.5 is a private address/],
    ['http://169.254.169.254/latest/meta-data/iam/', /169\.254\.169\.254 is a link-local address \(where cloud metadata services answer\)/],
    ['http://[fd00:ec2::254]/latest/meta-data/', /fd00:ec2::254 is a private address/],
    ['http://example.com:8080/', /port 8080 of example\.com is refused \(rule: only ports 80 and 443/],
    [`http://${pagesAt}/?to=${encodeURIComponent('http://169.254.169.254/latest/')}`, /169\.254\.169\.254 is a link-local/],
    [`http://${pagesAt}/?to=${encodeURIComponent('http://192.168.0.1/')}`, /192\.168\.0\.1 is a private address/],
  ];
  for (const [channel, cases] of [
    ['C0NARROW', narrow],
    ['C0WIDE', wide],
  ] as const) {
    const turns = cases.map(([url]) => toolTurn('web_fetch', { url }));
    const { ended, results } = await runScripted(stack, { channel, text: 'fetch these', turns: [...turns, { text: 'done' }] });
    assert.equal(ended.status, 'SUCCEEDED');
    cases.forEach(([url, rule], i) => {
      const result = results.get(toolUseIdOf(turns[i]!))!;
      assert.equal(result.status, 'error', url);
      assert.match(result.text, rule, url);
    });
  }
});

test('a channel whose settings allow no hosts is not offered web_fetch, and a call to it runs nothing', async () => {
  await putData(stack, 'settings.json', {});
  const fetch = toolTurn('web_fetch', { url: `http://${pagesAt}/page` });
  const { results, requests, threadId } = await runScripted(stack, { channel: 'C0NOFETCH', text: 'fetch', turns: [fetch, { text: 'ok' }] });
  assert.ok(!toolNamesOf(requests[0]!).includes('web_fetch'));
  assert.match(results.get(toolUseIdOf(fetch))!.text, /unknown tool web_fetch/);
  assert.ok(!statesOf(threadId).includes('ReachTool'));
});

test('MCP: the allowed tools of a declared server reach the model as <server>__<tool>, their results reach the model and the thread; the secret never shows; a server that is down is said once', async () => {
  await declareServers();
  const metricsFrom = stack.cloud.metrics.points.length;
  const lookup = toolTurn('orders__lookup_order', { id: '42' });
  const echo = toolTurn('orders__echo_auth', {});
  const chart = toolTurn('orders__order_chart', {});
  // The model's last answer repeats the first tool result, so the thread shows what the server said.
  stack.bedrock.setDefault((request) => {
    const last = (request.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : [])));
    return { text: `The server says: ${last[0]?.content?.[0]?.text ?? 'nothing'}` };
  });
  const { ended, results, requests, threadId, posted } = await runScripted(stack, {
    channel: MCP_CHANNEL,
    text: 'where is order 42?',
    turns: [lookup, echo, chart],
  });
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
  assert.equal(ended.status, 'SUCCEEDED');
  const offered = toolNamesOf(requests[0]!);
  assert.ok(offered.includes('orders__lookup_order') && offered.includes('orders__echo_auth'), offered.join(', '));
  assert.ok(!offered.includes('orders__delete_order'), 'a denied tool is not listed');
  assert.ok(!offered.some((name) => name.startsWith('billing__')), 'the down server offers nothing');
  const spec = requests[0]!.body.toolConfig!.tools!.find((t) => t.toolSpec?.name === 'orders__lookup_order')!.toolSpec!;
  assert.equal(spec.description, 'Look up an order by id');
  assert.deepEqual((spec.inputSchema!.json as { required?: string[] }).required, ['id']);

  const found = results.get(toolUseIdOf(lookup))!;
  assert.equal(found.status, 'success');
  assert.match(found.text, /Order 42: shipped on 2026-11-20/);
  assert.match(found.text, /\{"id":"42","status":"shipped"\}/, 'structured content as JSON');
  const inThread = stack.slack.messages.thread(posted.channel, posted.threadTs).filter((m) => m.bot_id);
  assert.ok(
    inThread.some((m) => m.text.includes('Order 42: shipped on 2026-11-20')),
    inThread.map((m) => m.text).join(' | '),
  );
  // The server got the secret; the model got it redacted.
  assert.deepEqual(new Set(orders.authorizations), new Set([`Bearer ${TOKEN}`]));
  assert.equal(results.get(toolUseIdOf(echo))!.text, 'You called me with the key [redacted MCP secret]');
  // An image in a result reaches the model as an image block of the tool result.
  const imageResult = requests
    .flatMap((r) => (r.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : []))))
    .find((r) => r.toolUseId === toolUseIdOf(chart))!;
  assert.match(imageResult.content?.[0]?.text ?? '', /Orders this week:\n\[image image\/png, \d+ bytes: image 1 below\]/);
  const image = imageResult.content?.[1]?.image;
  assert.equal(image?.format, 'png');
  assert.equal(Buffer.from(image!.source!.bytes as unknown as string, 'base64').toString('base64'), PIXEL_PNG);
  // The down server: said once, and the run went on.
  const notices = inThread.filter((m) => m.text.includes('could not reach the MCP server billing'));
  assert.equal(notices.length, 1, inThread.map((m) => m.text).join(' | '));
  assert.equal(statesOf(threadId).filter((name) => name === 'Connect').length, 1, 'listed once per run');

  // Nowhere else either: context, snapshot and listing, logs, chat, the model's requests.
  const threadDir = dataKeys(threadId).threadDir;
  const keys = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: `${threadDir}/` }));
  const stored = await Promise.all((keys.Contents ?? []).map(async (o) => (await readData(stack, o.Key!)) ?? ''));
  assert.ok(stored.length >= 3, 'context, snapshot and listing were read');
  for (const [where, text] of [
    ['the thread folder in S3', stored.join('\n')],
    ['the logs', logs.join('\n')],
    ['Slack', JSON.stringify(stack.slack.calls)],
    ['Bedrock', JSON.stringify(stack.bedrock.requests)],
  ] as const) {
    assert.ok(!text.includes(TOKEN), `the secret appeared in ${where}`);
  }

  // One audit line per call: server, tool, duration, outcome, bytes (log line and audit record).
  const lines = logs.filter((line) => line.includes('"reach call"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  const line = lines.find((l) => l.toolUseId === toolUseIdOf(lookup))!;
  assert.equal(line.server, 'orders');
  assert.equal(line.serverTool, 'lookup_order');
  assert.equal(line.outcome, 'success');
  assert.ok(typeof line.durationMs === 'number' && (line.bytes as number) > 20, JSON.stringify(line));
  const record = await auditRecordOf(stack, threadId);
  // Metrics by server and tool.
  const reachCalls = stack.cloud.metrics.points
    .slice(metricsFrom)
    .filter((p) => p.name === 'ReachCalls' && p.dimensions.server === 'orders');
  assert.deepEqual(reachCalls.map((p) => p.dimensions.tool).sort(), ['echo_auth', 'lookup_order', 'order_chart']);
  const call = record.toolCalls.find((c) => c.name === 'orders__lookup_order')!;
  assert.equal(call.server, 'orders');
  assert.equal(call.tool, 'lookup_order');
  assert.equal(call.outcome, 'ok');
  assert.ok(call.bytes! > 20 && call.durationMs! >= 0);
});

test("MCP: a channel outside the server's channels is not offered its tools and pays no Connect step", async () => {
  await declareServers();
  const { ended, requests, threadId } = await runScripted(stack, { channel: 'C0ELSEWHERE', text: 'hello', turns: [{ text: 'hi' }] });
  assert.equal(ended.status, 'SUCCEEDED');
  assert.ok(!toolNamesOf(requests[0]!).some((name) => name.startsWith('orders__')));
  assert.ok(!statesOf(threadId).includes('Connect'));
});

test('MCP: a stdio server is refused in the isolated sandbox network: said once in the thread, its tools left out, the run goes on', async () => {
  await putData(stack, 'settings.json', {
    mcpServers: {
      notes: { command: 'node', args: ['notes-server.mjs'], channels: ['slack:C0STDIO'] },
      orders: { url: orders.url, headers: { Authorization: 'Bearer ${secret:orders-token}' }, channels: ['slack:C0STDIO'] },
    },
  });
  const lookup = toolTurn('orders__lookup_order', { id: 'A-7' });
  const { ended, requests, results, posted, threadId } = await runScripted(stack, {
    channel: 'C0STDIO',
    text: 'look up A-7',
    turns: [lookup, { text: 'Shipped.' }],
  });
  assert.equal(ended.status, 'SUCCEEDED');
  const offered = toolNamesOf(requests[0]!);
  assert.ok(!offered.some((name) => name.startsWith('notes__')), offered.join(', '));
  assert.ok(offered.includes('orders__lookup_order'), 'the HTTP server beside it is listed as before');
  assert.match(results.get(toolUseIdOf(lookup))!.text, /Order A-7: shipped/);
  const notices = stack.slack.messages
    .thread(posted.channel, posted.threadTs)
    .filter((m) => m.bot_id && m.text.includes('could not reach the MCP server notes'));
  assert.equal(notices.length, 1);
  assert.match(notices[0]!.text, /stdio server, which runs in the sandbox, and this deployment's sandbox network is isolated/);
  assert.match(notices[0]!.text, /needs the egress or public sandbox network/);
  assert.ok(!statesOf(threadId).includes('SandboxTool'), 'nothing ran in the sandbox for it');
});

test('MCP: a stop aborts the running call (the server sees it cancelled) and ends the run', async () => {
  await declareServers();
  const wait = toolTurn('orders__wait_for_shipment', {});
  const channel = MCP_CHANNEL;
  stack.bedrock.script({ takenBy: (r) => JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`), ...wait });
  const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> wait for the shipment' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const before = waits.cancelled;
  await eventually(() => waits.started > waits.cancelled, 60_000, 'the call at the server');
  await stack.slack.postUserMessage({ channel, text: 'stop', threadTs: posted.threadTs });
  await eventually(() => waits.cancelled > before, 30_000, 'the call cancelled at the server');
  const execution = [...stack.cloud.stepFunctions.executions.values()].find(
    (e) => (e.input as { threadId: string }).threadId === threadId,
  )!;
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution.executionArn, 30_000);
  assert.equal(ended.status, 'ABORTED');
});

test('MCP: a steer during a call lands after it: the result is kept, the model hears the steer next, the calls after it are skipped', async () => {
  await declareServers();
  const channel = MCP_CHANNEL;
  const inChannel = (r: RecordedRequest) => JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`);
  // One answer with two calls: the steer comes while the first runs, so the second never does.
  const first = { toolUseId: `tu-steer-wait-${Date.now()}`, name: 'orders__wait_for_release', input: {} };
  const second = { toolUseId: `tu-steer-lookup-${Date.now()}`, name: 'orders__lookup_order', input: { id: '7' } };
  stack.bedrock.script({ takenBy: inChannel, toolUses: [first, second] }, { takenBy: inChannel, text: 'Understood, order 9 instead.' });
  const firstRequest = stack.bedrock.requests.length;
  const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> check order 7' });
  await eventually(() => releases.waiting.length > 0, 60_000, 'the first call at the server');
  await stack.slack.postUserMessage({ channel, text: 'steer check order 9 instead', threadTs: posted.threadTs });
  // The steer is recorded on the run before the call ends (the run goes on only when the server answers).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  releases.waiting.shift()!();
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const execution = await eventually(
    () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId),
    30_000,
    'the run',
  );
  assert.equal((await stack.cloud.stepFunctions.waitForExecution(execution.executionArn, 60_000)).status, 'SUCCEEDED');
  const next = stack.bedrock.requests.slice(firstRequest).filter(inChannel)[1]!;
  const results = (next.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : [])));
  const text = (id: string) =>
    results
      .find((r) => r.toolUseId === id)
      ?.content?.map((c) => c.text)
      .join('') ?? '';
  assert.equal(text(first.toolUseId), 'released', 'the running call finished and its result was kept');
  assert.match(text(second.toolUseId), /not run|skipped|steer/i, 'the call after it did not run');
  assert.match(JSON.stringify(next.body.messages), /check order 9 instead/, 'the model heard the steer');
});

test('MCP: a call an approvals rule holds does not reach the server without a decision (also when it follows another reach call)', async () => {
  await declareServers({ approvals: [{ tool: 'orders__lookup_*', approvers: 'requester', timeoutMinutes: 0.1 }] });
  const before = lookups.count;
  // One answer with two calls: the second, held, would go from the reach step straight to the reach step.
  const echo = { toolUseId: `tu-held-echo-${Date.now()}`, name: 'orders__echo_auth', input: {} };
  const lookup = { toolUseId: `tu-held-lookup-${Date.now()}`, name: 'orders__lookup_order', input: { id: '13' } };
  const { ended, results } = await runScripted(stack, {
    channel: MCP_CHANNEL,
    text: 'look up order 13',
    turns: [{ toolUses: [echo, lookup] }, { text: 'It was not approved.' }],
    timeoutMs: 120_000,
  });
  assert.equal(ended.status, 'SUCCEEDED');
  assert.match(results.get(echo.toolUseId)!.text, /\[redacted MCP secret\]/, 'the call no rule holds ran');
  const held = results.get(lookup.toolUseId)!;
  assert.equal(held.status, 'error');
  assert.doesNotMatch(held.text, /shipped/);
  assert.equal(lookups.count, before, 'the held call never reached the server');
});
