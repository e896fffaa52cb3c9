import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  type BedrockRuntimeClientConfig,
  type ConverseStreamOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { gate, startBedrockFake, type BedrockFake } from '../src/bedrock.ts';

const MODEL = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const messages = [{ role: 'user' as const, content: [{ text: 'hello fake' }] }];

/** Runs fn against a fresh fake and a real SDK client (default config: HTTP/2 handler). */
async function withFake(
  fn: (fake: BedrockFake, client: BedrockRuntimeClient) => Promise<void>,
  config: Partial<BedrockRuntimeClientConfig> = {},
): Promise<void> {
  const fake = await startBedrockFake();
  const client = new BedrockRuntimeClient({
    endpoint: fake.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    ...config,
  });
  try {
    await fn(fake, client);
  } finally {
    client.destroy();
    await fake.close();
  }
}

/** Every event the SDK hands out, plus the name of its union member (unknown members are dropped by the SDK). */
async function collect(stream: AsyncIterable<ConverseStreamOutput> | undefined) {
  assert.ok(stream, 'response has a stream');
  const events: ConverseStreamOutput[] = [];
  for await (const event of stream) events.push(event);
  return { events, types: events.map((e) => Object.keys(e)[0]) };
}

const textOf = (events: ConverseStreamOutput[]) => events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');

test('streamed text arrives as several deltas, with stop reason and usage metadata', async () => {
  await withFake(async (fake, client) => {
    fake.script({
      text: ['Hel', 'lo, ', 'wor', 'ld!'],
      usage: { inputTokens: 12, outputTokens: 4, cacheReadInputTokens: 100, cacheWriteInputTokens: 7 },
    });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    const { events, types } = await collect(res.stream);

    assert.deepEqual(types, [
      'messageStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    assert.equal(textOf(events), 'Hello, world!');
    assert.equal(events[0]?.messageStart?.role, 'assistant');
    assert.equal(events[6]?.messageStop?.stopReason, 'end_turn');
    const metadata = events[7]?.metadata;
    assert.deepEqual(metadata?.usage, {
      inputTokens: 12,
      outputTokens: 4,
      totalTokens: 16,
      cacheReadInputTokens: 100,
      cacheWriteInputTokens: 7,
    });
    assert.equal(typeof metadata?.metrics?.latencyMs, 'number');
    // The default client reaches the fake over HTTP/2 cleartext.
    assert.equal(fake.requests[0]?.httpVersion, '2.0');
  });
});

test('a plain string is split after whitespace into several deltas', async () => {
  await withFake(async (fake, client) => {
    fake.script({ text: 'one two  three\nfour' });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    const { events, types } = await collect(res.stream);
    assert.equal(types.filter((t) => t === 'contentBlockDelta').length, 4);
    assert.equal(textOf(events), 'one two  three\nfour');
  });
});

test('a tool-use turn streams toolUse start, partial JSON input deltas and stopReason tool_use', async () => {
  await withFake(async (fake, client) => {
    const input = { city: 'Paris', days: [1, 2, 3], units: 'metric' };
    fake.script({ text: 'Checking.', toolUses: [{ toolUseId: 'tu-1', name: 'get_weather', input, chunks: 3 }] });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    const { events, types } = await collect(res.stream);

    assert.deepEqual(types, [
      'messageStart',
      'contentBlockDelta', // text, block 0
      'contentBlockStop',
      'contentBlockStart', // toolUse, block 1
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    assert.deepEqual(events[3]?.contentBlockStart, {
      contentBlockIndex: 1,
      start: { toolUse: { toolUseId: 'tu-1', name: 'get_weather' } },
    });
    const partials = events
      .filter((e) => e.contentBlockDelta?.contentBlockIndex === 1)
      .map((e) => e.contentBlockDelta?.delta?.toolUse?.input ?? '');
    assert.equal(partials.length, 3);
    assert.deepEqual(JSON.parse(partials.join('')), input);
    assert.equal(events[8]?.messageStop?.stopReason, 'tool_use');
  });
});

test('an HTTP 429 surfaces as ThrottlingException; the SDK retries it unless maxAttempts is 1', async () => {
  await withFake(
    async (fake, client) => {
      fake.script({ error: { type: 'ThrottlingException', message: 'Too many requests, slow down' } });
      await assert.rejects(
        client.send(new ConverseStreamCommand({ modelId: MODEL, messages })),
        (err: Error & { $metadata?: { httpStatusCode?: number } }) => {
          assert.equal(err.name, 'ThrottlingException');
          assert.equal(err.message, 'Too many requests, slow down');
          assert.equal(err.$metadata?.httpStatusCode, 429);
          return true;
        },
      );
      assert.equal(fake.requests.length, 1);
    },
    { maxAttempts: 1 },
  );

  // With the default retry strategy, one throttle is absorbed: two requests, one success.
  await withFake(async (fake, client) => {
    fake.script({ error: { type: 'ThrottlingException' } }, { text: 'after retry' });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    assert.equal(textOf((await collect(res.stream)).events), 'after retry');
    assert.equal(res.$metadata.attempts, 2);
    assert.equal(fake.requests.length, 2);
  });
});

test('other HTTP errors map to their SDK error names and statuses', async () => {
  await withFake(
    async (fake, client) => {
      const cases = [
        ['ValidationException', 400],
        ['AccessDeniedException', 403],
        ['InternalServerException', 500],
        ['ServiceUnavailableException', 503],
      ] as const;
      for (const [type, status] of cases) {
        fake.script({ error: { type } });
        await assert.rejects(
          client.send(new ConverseCommand({ modelId: MODEL, messages })),
          (err: Error & { $metadata?: { httpStatusCode?: number } }) => {
            assert.equal(err.name, type);
            assert.equal(err.$metadata?.httpStatusCode, status);
            return true;
          },
        );
      }
      assert.equal(fake.requests.length, cases.length);
    },
    { maxAttempts: 1 },
  );
});

test('an in-stream exception event surfaces as an error while iterating, after the text', async () => {
  await withFake(async (fake, client) => {
    fake.script(
      { text: ['partial ', 'answer'], streamError: { type: 'throttlingException', message: 'slow down mid-stream' } },
      { text: 'x', streamError: { type: 'modelStreamErrorException', message: 'model broke' } },
    );
    for (const [name, message] of [
      ['ThrottlingException', 'slow down mid-stream'],
      ['ModelStreamErrorException', 'model broke'],
    ]) {
      const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
      assert.ok(res.stream);
      const seen: ConverseStreamOutput[] = [];
      await assert.rejects(
        (async () => {
          for await (const event of res.stream ?? []) seen.push(event);
        })(),
        (err: Error) => err.name === name && err.message === message,
      );
      assert.ok(
        seen.some((e) => e.contentBlockDelta),
        'text deltas arrived before the exception',
      );
      assert.ok(!seen.some((e) => e.messageStop));
    }
  });
});

test('a held stream stays open mid-text until released', async () => {
  await withFake(async (fake, client) => {
    const g = gate();
    fake.script({ text: ['first ', 'second'], hold: g.promise, holdAfterDeltas: 1 });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    assert.ok(res.stream);
    const it = res.stream[Symbol.asyncIterator]();
    assert.ok((await it.next()).value?.messageStart);
    assert.equal((await it.next()).value?.contentBlockDelta?.delta?.text, 'first ');

    const next = it.next();
    const raced = await Promise.race([next.then(() => 'event'), new Promise((r) => setTimeout(r, 100, 'held'))]);
    assert.equal(raced, 'held');

    g.release();
    assert.equal((await next).value?.contentBlockDelta?.delta?.text, 'second');
    const rest: ConverseStreamOutput[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    assert.deepEqual(
      rest.map((e) => Object.keys(e)[0]),
      ['contentBlockStop', 'messageStop', 'metadata'],
    );
  });
});

test('delays are applied before the first byte and between events', async () => {
  await withFake(async (fake, client) => {
    fake.script({ text: ['a', 'b', 'c'], firstByteDelayMs: 60, delayMs: 20 });
    const started = Date.now();
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    const { events } = await collect(res.stream);
    // 60ms first byte + 7 gaps of 20ms; allow for timer imprecision.
    assert.ok(Date.now() - started >= 180, `took ${Date.now() - started}ms`);
    assert.ok((events.at(-1)?.metadata?.metrics?.latencyMs ?? 0) >= 180);
  });
});

test('the non-streaming converse route returns output.message, stopReason, usage and metrics', async () => {
  await withFake(async (fake, client) => {
    fake.script({
      text: 'Let me look.',
      toolUses: [{ toolUseId: 'tu-9', name: 'search', input: { q: 'x' } }],
      usage: { inputTokens: 5, outputTokens: 6 },
    });
    const res = await client.send(new ConverseCommand({ modelId: MODEL, messages }));
    assert.deepEqual(res.output?.message, {
      role: 'assistant',
      content: [{ text: 'Let me look.' }, { toolUse: { toolUseId: 'tu-9', name: 'search', input: { q: 'x' } } }],
    });
    assert.equal(res.stopReason, 'tool_use');
    assert.deepEqual(res.usage, { inputTokens: 5, outputTokens: 6, totalTokens: 11 });
    assert.equal(typeof res.metrics?.latencyMs, 'number');
    assert.equal(fake.requests[0]?.operation, 'converse');
  });
});

test('requests are recorded with decoded modelId and parsed body; the default turn echoes the user', async () => {
  await withFake(async (fake, client) => {
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0';
    const res = await client.send(
      new ConverseStreamCommand({
        modelId: arn,
        system: [{ text: 'You are terse.' }],
        messages: [
          { role: 'user', content: [{ text: 'earlier' }] },
          { role: 'assistant', content: [{ text: 'ok' }] },
          { role: 'user', content: [{ text: 'echo me' }] },
        ],
        inferenceConfig: { maxTokens: 256, temperature: 0.2 },
        toolConfig: { tools: [{ toolSpec: { name: 'noop', inputSchema: { json: { type: 'object' } } } }] },
      }),
    );
    assert.equal(textOf((await collect(res.stream)).events), 'echo me');

    assert.equal(fake.requests.length, 1);
    const req = fake.requests[0];
    assert.ok(req);
    assert.equal(req.modelId, arn);
    assert.equal(req.operation, 'converse-stream');
    assert.match(req.path, /^\/model\/arn%3Aaws%3Abedrock.*%2Fglobal\..*%3A0\/converse-stream$/);
    assert.deepEqual(req.body.system, [{ text: 'You are terse.' }]);
    assert.equal(req.body.messages?.length, 3);
    assert.deepEqual(req.body.inferenceConfig, { maxTokens: 256, temperature: 0.2 });
    assert.equal(req.body.toolConfig?.tools?.[0]?.toolSpec?.name, 'noop');
    assert.ok(req.time <= Date.now());

    fake.setDefault((r) => ({ text: `model was ${r.modelId}` }));
    const res2 = await client.send(new ConverseCommand({ modelId: 'm', messages }));
    assert.deepEqual(res2.output?.message?.content, [{ text: 'model was m' }]);
  });
});

test('works with an HTTP/1.1 handler too', async () => {
  await withFake(
    async (fake, client) => {
      fake.script({ text: 'over http1' });
      const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages }));
      assert.equal(textOf((await collect(res.stream)).events), 'over http1');
      assert.equal(fake.requests[0]?.httpVersion, '1.1');
    },
    { requestHandler: new NodeHttpHandler() },
  );
});

test('a client with no endpoint reaches the fake through AWS_ENDPOINT_URL_BEDROCK_RUNTIME', async () => {
  const fake = await startBedrockFake();
  const saved = process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME;
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = fake.endpoint;
  const client = new BedrockRuntimeClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  try {
    fake.script({ text: 'via env' });
    const res = await client.send(new ConverseCommand({ modelId: MODEL, messages }));
    assert.deepEqual(res.output?.message?.content, [{ text: 'via env' }]);
    assert.equal(fake.requests.length, 1);
  } finally {
    client.destroy();
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME;
    else process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = saved;
    await fake.close();
  }
});

test('unknown routes get a 404 JSON error and are not recorded', async () => {
  const fake = await startBedrockFake();
  try {
    const res = await fetch(`${fake.endpoint}/model/m/invoke`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 404);
    assert.match(String(((await res.json()) as { message?: unknown }).message), /No route/);
    assert.equal(fake.requests.length, 0);
  } finally {
    await fake.close();
  }
});

test('a turn scripted for one conversation is passed by the requests of another', async () => {
  await withFake(async (fake, client) => {
    const of = (thread: string) => (r: { body: { system?: unknown } }) => JSON.stringify(r.body.system ?? '').includes(thread);
    fake.script({ text: 'first for A', takenBy: of('thread-A') }, { text: 'second for A', takenBy: of('thread-A') });
    const ask = async (thread: string) => {
      const res = await client.send(new ConverseCommand({ modelId: MODEL, system: [{ text: `thread ${thread}` }], messages }));
      return res.output?.message?.content?.[0]?.text;
    };
    assert.equal(await ask('thread-A'), 'first for A');
    // Another thread's run in between (a periodic event firing) gets the default, not A's next turn.
    assert.equal(await ask('thread-B'), 'hello fake');
    assert.equal(await ask('thread-A'), 'second for A');
  });
});
