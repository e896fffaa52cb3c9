// settings.json's mcpServers and webFetch: what is accepted and refused (with the message an operator
// reads), what a run in a channel gets, how server tools are named and filtered, and how an MCP
// result is turned into what the model reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { settingsSchema } from '../../shared/settings/schema.ts';
import { issueLines } from '../../shared/support/validation.ts';
import { runReachOf } from '../../shared/reach/run-reach.ts';
import { modelToolName, toolOffered } from '../../shared/reach/mcp-tools.ts';
import { resultOutcome } from '../../shared/reach/mcp-client.ts';
import { effectiveSettings } from '../../shared/commands/settings.ts';

const problems = (json: unknown) => {
  const parsed = settingsSchema.safeParse(json);
  return parsed.success ? [] : issueLines(parsed.error.issues);
};

const ORDERS = {
  url: 'https://mcp.internal.example/mcp',
  headers: { Authorization: 'Bearer ${secret:orders-token}' },
  channels: ['slack:C0123'],
  tools: { allow: ['lookup_*'], deny: ['delete_*'] },
};

test('settings: an operator server may use secrets; a channel server may not, and is told why', () => {
  assert.deepEqual(problems({ mcpServers: { orders: ORDERS }, webFetch: { allow: ['docs.aws.amazon.com', '*.github.com'] } }), []);
  const channel = problems({
    channels: {
      'slack:C0123': {
        mcpServers: { mine: { url: 'https://x.example/mcp', headers: { Authorization: 'Bearer ${secret:orders-token}' } } },
      },
    },
  });
  assert.equal(channel.length, 1);
  assert.match(channel[0]!, /may not use \$\{secret:…\}: only servers in the top-level mcpServers/);
  assert.match(
    problems({ mcpServers: { orders: { ...ORDERS, url: 'file:///etc/passwd' } } })[0]!,
    /must be an http:\/\/ or https:\/\/ URL/,
  );
  assert.match(problems({ mcpServers: { 'bad name!': { url: 'https://x.example/' } } })[0]!, /must be 1-32 letters, digits or -/);
  assert.match(problems({ mcpServers: { orders: { ...ORDERS, extra: 1 } } })[0]!, /extra/);
  assert.match(problems({ webFetch: { allow: ['https://docs.example.com'] } })[0]!, /must be a lower-case host name/);
  // A channel server is held to web_fetch's rules; `channels` means nothing there.
  assert.match(problems({ channels: { 'slack:C1': { mcpServers: { x: { url: 'https://x.example/', channels: [] } } } } })[0]!, /channels/);
});

test('settings: a stdio server has command (not url), plain env values only, and only the operator may declare one', () => {
  const notes = { command: 'npx', args: ['-y', '@example/notes-mcp'], env: { NOTES_MODE: 'read-only' }, channels: ['slack:C0123'] };
  assert.deepEqual(problems({ mcpServers: { notes } }), []);
  const secret = problems({ mcpServers: { notes: { ...notes, env: { NOTES_TOKEN: '${secret:notes-token}' } } } });
  assert.equal(secret.length, 1);
  assert.match(
    secret[0]!,
    /env\.NOTES_TOKEN.*a stdio server may not use \$\{secret:…\}: it runs in the sandbox, where the agent's commands could read its environment/,
  );
  assert.match(
    problems({ mcpServers: { both: { ...notes, url: 'https://x.example/mcp' } } })[0]!,
    /either url \(HTTP\) or command \(stdio/,
  );
  assert.match(problems({ mcpServers: { neither: { channels: ['slack:C1'] } } })[0]!, /either url \(HTTP\) or command \(stdio/);
  assert.match(problems({ mcpServers: { notes: { ...notes, headers: { A: 'b' } } } })[0]!, /headers are for an HTTP server/);
  assert.match(problems({ mcpServers: { web: { url: 'https://x.example/mcp', args: ['x'] } } })[0]!, /args is for a stdio server/);
  assert.match(problems({ channels: { 'slack:C1': { mcpServers: { notes: { command: 'npx' } } } } }).join('\n'), /command/);
  const settings = settingsSchema.parse({ mcpServers: { notes } });
  assert.deepEqual(runReachOf(settings, 'slack:C0123')!.mcpServers, [
    {
      name: 'notes',
      command: 'npx',
      args: ['-y', '@example/notes-mcp'],
      env: { NOTES_MODE: 'read-only' },
      timeoutSeconds: 30,
      declaredBy: 'operator',
    },
  ]);
});

test("a run gets the servers of its channel (operator servers for it or for every channel, and the channel's own) and its web_fetch hosts", () => {
  const settings = settingsSchema.parse({
    mcpServers: { orders: ORDERS, wiki: { url: 'https://wiki.example/mcp' } },
    webFetch: { allow: ['docs.example.com'] },
    channels: { 'slack:C0999': { webFetch: { allow: [] }, mcpServers: { mine: { url: 'https://mine.example/mcp' } } } },
  });
  const inOrders = runReachOf(settings, 'slack:C0123')!;
  assert.deepEqual(
    inOrders.mcpServers!.map((s) => [s.name, s.declaredBy]),
    [
      ['orders', 'operator'],
      ['wiki', 'operator'],
    ],
  );
  assert.deepEqual(inOrders.webFetch, { allow: ['docs.example.com'] });
  const elsewhere = runReachOf(settings, 'slack:C0999')!;
  assert.deepEqual(
    elsewhere.mcpServers!.map((s) => [s.name, s.declaredBy]),
    [
      ['wiki', 'operator'],
      ['mine', 'channel'],
    ],
  );
  assert.equal(elsewhere.webFetch, undefined, 'the channel turned web_fetch off');
  assert.equal(runReachOf(settingsSchema.parse({}), 'slack:C0123'), undefined, 'nothing to reach: nothing in the snapshot');
  // `settings` shows the channel's servers only.
  assert.deepEqual(Object.keys(effectiveSettings(settings, 'slack:C0999').mcpServers as object), ['wiki', 'mine']);
});

test("tool names: <server>__<tool> within Bedrock's rule, shortened deterministically; allow and deny patterns", () => {
  assert.equal(modelToolName('orders', 'lookup_order'), 'orders__lookup_order');
  const odd = modelToolName('orders', 'get.order/by id');
  assert.match(odd, /^orders__get_order_by_id_[0-9a-f]{8}$/);
  assert.notEqual(odd, modelToolName('orders', 'get_order_by_id'), 'two names that sanitize alike still differ');
  const long = modelToolName('a-long-server-name', 'x'.repeat(80));
  assert.ok(long.length <= 64 && /^[a-zA-Z0-9_-]+$/.test(long), long);
  assert.equal(long, modelToolName('a-long-server-name', 'x'.repeat(80)));
  assert.notEqual(long, modelToolName('a-long-server-name', `${'x'.repeat(79)}y`));
  const server = { tools: { allow: ['lookup_*', 'list'], deny: ['lookup_secret*'] } };
  assert.deepEqual(
    ['lookup_order', 'list', 'lookup_secret_key', 'delete_order', 'listing'].filter((t) => toolOffered(server, t)),
    ['lookup_order', 'list'],
  );
  assert.ok(toolOffered({}, 'anything'));
});

test('an MCP result as the model reads it: text, images Bedrock takes, resources, structured content as JSON, other binary parts named; isError is an error', () => {
  const outcome = resultOutcome({
    content: [
      { type: 'text', text: 'hello' },
      { type: 'image', data: Buffer.from('png bytes!').toString('base64'), mimeType: 'image/png' },
      { type: 'image', data: Buffer.from('bmp').toString('base64'), mimeType: 'image/bmp' },
      { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inside' } },
      { type: 'resource_link', uri: 'https://x.example/doc', name: 'doc' },
    ],
    structuredContent: { ok: true },
    isError: true,
  });
  assert.equal(outcome.status, 'error');
  assert.equal(
    outcome.text,
    'hello\n[image image/png, 10 bytes: image 1 below]\n[image image/bmp, 3 bytes: not shown]\n[resource file:///a.txt]\ninside\n[resource link https://x.example/doc (doc)]\n{"ok":true}',
  );
  assert.deepEqual(outcome.images, [{ format: 'png', data: Buffer.from('png bytes!').toString('base64') }], 'a format Bedrock takes');
  assert.equal(outcome.bytes, Buffer.byteLength(outcome.text) + 10 + 0);
  const long = resultOutcome({ content: [{ type: 'text', text: 'y'.repeat(50_000) }] });
  assert.ok(long.text.length < 31_000 && /result truncated/.test(long.text));
  assert.equal(long.bytes, 50_000);
});
