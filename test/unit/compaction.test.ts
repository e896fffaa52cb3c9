import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BedrockRuntimeClient, type ContentBlock, type Message } from '@aws-sdk/client-bedrock-runtime';
import {
  COMPACTION_ACK,
  COMPACTION_SYSTEM_PROMPT,
  DEFAULT_COMPACTION_SETTINGS,
  IMAGE_TOKENS,
  TRUNCATION_NOTICE,
  bedrockSummarizer,
  compactContext,
  compactionThreshold,
  estimateTokens,
  needsCompaction,
  splitForCompaction,
} from '../../shared/context/compaction.ts';
import { mergeConsecutiveRoles, textOf } from '../../shared/model/converse.ts';
import { archiveKey, toBedrockMessages, type ContextEntry } from '../../shared/context/store.ts';
import { repairToolPairs } from '../../shared/context/tool-calls.ts';
import { startBedrockFake } from '../../packages/local-cloud/src/bedrock.ts';

const MODEL = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const META = { runId: 'run-compact', at: '2025-06-01T10:20:30.456Z' };

/** A small seeded PRNG (mulberry32), so every failing shape can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = (n: number, seed = 'lorem') => `${seed} `.repeat(Math.ceil(n / (seed.length + 1))).slice(0, n);
const meta = (i: number): ContextEntry['meta'] => ({ runId: `run-${i}`, at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString() });
const user = (text: string, i = 0): ContextEntry => ({ role: 'user', content: [{ text }], meta: meta(i) });
const assistant = (content: ContentBlock[], i = 0): ContextEntry => ({ role: 'assistant', content, meta: meta(i) });
const use = (id: string, name: string, input: unknown): ContentBlock => ({ toolUse: { toolUseId: id, name, input: input as never } });
const result = (id: string, text: string, status: 'success' | 'error' = 'success'): ContentBlock => ({
  toolResult: { toolUseId: id, content: [{ text }], status },
});
const results = (blocks: ContentBlock[], i = 0): ContextEntry => ({ role: 'user', content: blocks, meta: meta(i) });

const hasToolResult = (e: ContextEntry) => e.content.some((b) => b.toolResult);
const isUserText = (e: ContextEntry | undefined) =>
  e?.role === 'user' && !hasToolResult(e) && e.content.some((b) => typeof b.text === 'string');

/** Every toolResult in entries has its toolUse earlier in the same entries. */
function orphanedResults(entries: readonly ContextEntry[]): string[] {
  const seen = new Set<string>();
  const orphans: string[] = [];
  for (const entry of entries) {
    for (const b of entry.content) {
      if (b.toolResult && !seen.has(b.toolResult.toolUseId ?? '')) orphans.push(b.toolResult.toolUseId ?? '');
      if (b.toolUse?.toolUseId) seen.add(b.toolUse.toolUseId);
    }
  }
  return orphans;
}

/** What Bedrock checks: alternating roles from a user turn; results answer the toolUses right before them. */
function assertBedrockValid(messages: Message[], label: string): void {
  assert.equal(messages[0]?.role, 'user', `${label}: starts with a user message`);
  messages.forEach((m, i) => {
    if (i > 0) assert.notEqual(m.role, messages[i - 1]!.role, `${label}: roles alternate at ${i}`);
    const ids = (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult.toolUseId] : []));
    if (ids.length === 0) return;
    const uses = new Set((messages[i - 1]?.content ?? []).flatMap((b) => (b.toolUse ? [b.toolUse.toolUseId] : [])));
    for (const id of ids) assert.ok(uses.has(id), `${label}: toolResult ${id} at ${i} answers a toolUse of the message before`);
  });
}

const sendable = (entries: ContextEntry[]) => repairToolPairs(mergeConsecutiveRoles(toBedrockMessages(entries)));

/**
 * A random thread: user turns, each answered by zero or more tool rounds and usually a text
 * answer; tool rounds have 1-3 parallel calls, results sometimes split over two user messages,
 * steering after results, a user message stored between a toolUse and its results, runs that
 * crashed between a toolUse and its result, and a failed run that left two user messages in a row.
 */
function randomThread(rand: () => number): ContextEntry[] {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const entries: ContextEntry[] = [];
  let id = 0;
  const turns = int(1, 30);
  for (let t = 0; t < turns; t++) {
    entries.push(user(`u${t}: ${words(int(5, 4000))}`, t));
    if (rand() < 0.1) entries.push(user(`u${t} again: ${words(int(5, 300))}`, t));
    const rounds = int(0, 5);
    let crashed = false;
    for (let r = 0; r < rounds && !crashed; r++) {
      const ids = Array.from({ length: int(1, 3) }, () => `tooluse_${++id}`);
      const content: ContentBlock[] = rand() < 0.5 ? [{ text: words(int(1, 400), 'thinking') }] : [];
      content.push(
        ...ids.map((tid) => use(tid, rand() < 0.5 ? 'bash' : 'read_file', { path: `src/${tid}.ts`, body: words(int(0, 2000), 'code') })),
      );
      entries.push(assistant(content, t));
      if (rand() < 0.05) {
        crashed = true; // the run died before any result: the next user turn follows directly
        break;
      }
      // A message that arrived while the tools ran, stored before their results.
      if (rand() < 0.05) entries.push(user(`u${t} meanwhile: ${words(int(5, 3000))}`, t));
      const blocks = ids.map((tid) => result(tid, words(int(0, 9000), 'output'), rand() < 0.2 ? 'error' : 'success'));
      if (blocks.length > 1 && rand() < 0.2) {
        entries.push(results(blocks.slice(0, 1), t), results(blocks.slice(1), t));
      } else entries.push(results(blocks, t));
      if (rand() < 0.1) entries.push(user(`(steering from the user while you worked) ${words(int(5, 200))}`, t));
    }
    if (!crashed && rand() < 0.9) entries.push(assistant([{ text: `a${t}: ${words(int(1, 3000))}` }], t));
  }
  return entries;
}

/** The split, worked out the slow way from its definition, independently of the implementation. */
function expectedCut(entries: ContextEntry[], keep: number): number {
  const n = entries.length;
  const valid = (j: number) => isUserText(entries[j]) && orphanedResults(entries.slice(j)).length === 0;
  let suffix = 0;
  let c = -1;
  for (let j = n - 1; j >= 0; j--) {
    suffix += estimateTokens([entries[j]!]);
    if (suffix >= keep) {
      c = j;
      break;
    }
  }
  if (c <= 0) return 0;
  for (let j = c; j >= 1; j--) if (valid(j)) return j;
  for (let j = c + 1; j < n; j++) if (valid(j)) return j;
  return 0;
}

test('token estimate: ~4 characters per token, images a fixed cost, cache points free', () => {
  assert.equal(estimateTokens(''), 0);
  assert.equal(estimateTokens('abcd'.repeat(100)), 100);
  assert.equal(estimateTokens('abcde'), 2);
  assert.equal(estimateTokens([{ text: 'x'.repeat(400) }]), 100);
  assert.equal(estimateTokens([{ cachePoint: { type: 'default' } }]), 0);
  const png = { image: { format: 'png' as const, source: { bytes: new Uint8Array(500_000) } } };
  assert.equal(estimateTokens([png]), IMAGE_TOKENS);
  // After a JSON round trip (context.jsonl) the bytes are an object: still the fixed cost.
  assert.equal(estimateTokens(JSON.parse(JSON.stringify([png])) as ContentBlock[]), IMAGE_TOKENS);
  const input = { path: 'src/a.ts', content: 'y'.repeat(1000) };
  const call = estimateTokens([use('t1', 'write_file', input)]);
  assert.equal(call, Math.ceil(('write_file'.length + JSON.stringify(input).length) / 4));
  const answer = estimateTokens([result('t1', 'z'.repeat(4000))]);
  assert.ok(answer >= 1000 && answer <= 1010, `a 4,000-char result is ~1,000 tokens (got ${answer})`);
  // Entries add a few tokens of framing each.
  const entries = [user('a'.repeat(40)), assistant([{ text: 'b'.repeat(40) }])];
  assert.equal(estimateTokens(entries), 2 * 10 + 2 * 4);
  // Sanity against a real-ish ratio: 10k chars of prose is in the 2k-3.5k token range of real tokenisers.
  const prose = estimateTokens(words(10_000, 'The quick brown fox jumps over the lazy dog.'));
  assert.ok(prose >= 2_000 && prose <= 3_500);
});

test('needsCompaction is true strictly above thresholdRatio × (window − reserved)', () => {
  assert.equal(compactionThreshold(), 0.8 * (200_000 - 16_384));
  const settings = { contextWindowTokens: 1_000, reservedOutputTokens: 200, thresholdRatio: 0.5 }; // threshold 400
  const at = [user('x'.repeat((300 - 4) * 4))]; // 296 + 4 framing = 300
  assert.equal(estimateTokens(at), 300);
  assert.equal(needsCompaction(at, settings, 100), false, 'exactly at the threshold: no');
  const over = [user('x'.repeat((300 - 4) * 4 + 1))];
  assert.equal(estimateTokens(over), 301);
  assert.equal(needsCompaction(over, settings, 100), true, 'one token over: yes');
  assert.equal(needsCompaction(over, settings, 0), false, 'the system prompt and tools count too');
  // Defaults apply for whatever is not given (undefined included).
  const big = [user('x'.repeat(4 * 146_890))];
  assert.equal(needsCompaction(big, {}), true);
  assert.equal(needsCompaction(big, { contextWindowTokens: undefined, thresholdRatio: 0.9 }), false);
});

test('split: never separates a toolUse from its results, and the kept part opens with a user turn (random threads)', () => {
  let compacted = 0;
  let short = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const rand = prng(seed);
    const entries = randomThread(rand);
    const keep = [200, 1_000, 3_000, 10_000, 20_000][seed % 5]!;
    const { older, recent } = splitForCompaction(entries, keep);
    const label = `seed ${seed} (keep ${keep}, ${entries.length} entries)`;
    assert.deepEqual([...older, ...recent], entries, `${label}: older + recent is the whole context, in order`);
    assert.ok(recent.length > 0, `${label}: something is kept`);
    assert.equal(older.length, expectedCut(entries, keep), `${label}: the cut is the latest safe one`);
    if (older.length === 0) continue;
    compacted++;
    assert.ok(isUserText(recent[0]), `${label}: recent[0] is a user text message`);
    assert.deepEqual(orphanedResults(recent), [], `${label}: no toolResult without its toolUse`);
    if (estimateTokens(recent) < keep) short++;
    // What the model would receive after compaction is a valid Converse request.
    const after: ContextEntry[] = [user('Previously in this thread (summary): …'), assistant([{ text: COMPACTION_ACK }]), ...recent];
    assertBedrockValid(sendable(after), label);
  }
  assert.ok(compacted > 200, `most shapes compact (${compacted})`);
  assert.ok(short > 0 && short < compacted / 4, `keeping less than keepRecentTokens is the exception (${short})`);
});

test('split: nothing to do when everything fits, or when no safe cut exists', () => {
  const small = [user('hi'), assistant([{ text: 'hello' }])];
  assert.deepEqual(splitForCompaction(small, 20_000), { older: [], recent: small });
  // One user turn followed only by tool rounds: the only user turn is the first message.
  const run: ContextEntry[] = [user('do it all')];
  for (let i = 0; i < 50; i++) run.push(assistant([use(`t${i}`, 'bash', { cmd: 'x' })]), results([result(`t${i}`, words(2_000))]));
  assert.equal(splitForCompaction(run, 1_000).older.length, 0);
  // The same run followed by a new prompt: the cut falls forward to the new prompt.
  const next = [...run, assistant([{ text: 'done' }]), user('thanks, now the next thing')];
  const split = splitForCompaction(next, 1_000);
  assert.equal(split.recent.length, 1);
  assert.equal(split.recent[0], next.at(-1));
});

/** A long scripted thread: 75 exchanges of user ask → read_file → result → answer (300 messages). */
function longThread(): ContextEntry[] {
  const entries: ContextEntry[] = [];
  for (let i = 0; i < 75; i++) {
    entries.push(user(`alice: please review src/module-${i}.ts and tell me what ${words(300, `item${i}`)}`, i));
    entries.push(assistant([{ text: `Reading src/module-${i}.ts.` }, use(`tooluse_${i}`, 'read_file', { path: `src/module-${i}.ts` })], i));
    entries.push(results([result(`tooluse_${i}`, `// module ${i}\n${words(8_000, `const v${i} = ${i};`)}`)], i));
    entries.push(assistant([{ text: `Module ${i} is fine: ${words(600, 'verdict')}` }], i));
  }
  return entries;
}

test('a long thread with tool calls compacts to under the threshold, summary first, recent ~20k tokens verbatim', async () => {
  const entries = longThread();
  assert.equal(entries.length, 300);
  assert.equal(needsCompaction(entries, {}), true, `the thread is over the threshold (${estimateTokens(entries)} tokens)`);
  const prompts: { system: string; transcript: string }[] = [];
  const summary = '- Alice asked for reviews of src/module-0.ts … src/module-N.ts; each was found fine.';
  const out = await compactContext({ summarize: async (p) => (prompts.push(p), summary) }, entries, {}, META);

  assert.equal(out.compacted, true);
  assert.equal(out.fallback, undefined);
  const [head, ack, ...recent] = out.entries;
  assert.equal(head?.role, 'user');
  assert.equal(textOf(head!.content), `Previously in this thread (summary of ${out.removedEntries} earlier messages):\n\n${summary}`);
  assert.equal(ack?.role, 'assistant');
  assert.equal(out.summaryTokens, estimateTokens([head!]));
  // The newest messages are kept as they were, ~20k tokens of them, starting at a user ask.
  assert.equal(out.removedEntries + recent.length, entries.length);
  assert.deepEqual(recent, entries.slice(out.removedEntries));
  const kept = estimateTokens(recent);
  assert.ok(
    kept >= DEFAULT_COMPACTION_SETTINGS.keepRecentTokens && kept < DEFAULT_COMPACTION_SETTINGS.keepRecentTokens + 2_600,
    `kept ${kept} tokens`,
  );
  assert.ok(isUserText(recent[0]));
  assert.equal(needsCompaction(out.entries, {}, 5_000), false);
  assert.equal(out.tokensAfter, estimateTokens(out.entries));
  assert.ok(out.tokensAfter < out.tokensBefore / 5);
  // Alternating roles, nothing for repairToolPairs to fix: sendable as is.
  assertBedrockValid(toBedrockMessages(out.entries), 'compacted');
  assert.deepEqual(sendable(out.entries), toBedrockMessages(out.entries));
  // The synthetic entries are not taken for the run's own answers (agent.ts matches by runId).
  assert.notEqual(ack!.meta.runId, META.runId);
  assert.equal(ack!.meta.step, undefined);
  assert.equal(ack!.meta.at, META.at);

  // The model saw a readable transcript of the older part only, tool output cut short.
  assert.equal(prompts.length, 1);
  const { system, transcript } = prompts[0]!;
  assert.equal(system, COMPACTION_SYSTEM_PROMPT);
  assert.match(system, /faithful/);
  assert.ok(transcript.startsWith('[1] user:\nalice: please review src/module-0.ts'));
  assert.ok(transcript.includes('→ tool(read_file, {"path":"src/module-0.ts"})'));
  assert.match(transcript, /\n← result\(read_file\): \/\/ module 0 ⏎ const v0 = 0;/);
  assert.ok(!transcript.includes(`src/module-${entries.length / 4 - 1}.ts`), 'the kept messages are not in the transcript');
  for (const line of transcript.split('\n').filter((l) => l.startsWith('← result'))) {
    assert.ok(line.length < 560, `results are cut to ~500 characters (${line.length})`);
  }
  assert.ok(estimateTokens(transcript) < estimateTokens(entries.slice(0, out.removedEntries)) / 4);
});

test('compacting again folds the earlier summary in and counts every original message', async () => {
  const first = await compactContext({ summarize: async () => 'first summary' }, longThread(), { keepRecentTokens: 60_000 }, META);
  assert.equal(first.compacted, true);
  const grown = [...first.entries];
  for (let i = 100; i < 140; i++) {
    grown.push(user(`bob: question ${i} ${words(3_000)}`, i), assistant([{ text: `answer ${i} ${words(3_000)}` }], i));
  }
  let transcript = '';
  const second = await compactContext({ summarize: async (p) => ((transcript = p.transcript), 'second summary') }, grown, {}, META);
  assert.equal(second.compacted, true);
  assert.ok(
    transcript.startsWith(`[1] user:\nPreviously in this thread (summary of ${first.removedEntries} earlier messages):\n\nfirst summary`),
  );
  const originals = first.removedEntries + second.removedEntries - 2; // the first summary and its ack are not originals
  assert.match(
    textOf(second.entries[0]!.content),
    new RegExp(`^Previously in this thread \\(summary of ${originals} earlier messages\\):\n\nsecond summary$`),
  );
});

test('nothing to compact: the context comes back unchanged and the model is not called', async () => {
  const entries = [user('hi'), assistant([{ text: 'hello' }])];
  let calls = 0;
  const out = await compactContext({ summarize: async () => (calls++, 'x') }, entries, {}, META);
  assert.equal(calls, 0);
  assert.deepEqual(out, {
    entries,
    compacted: false,
    summaryTokens: 0,
    removedEntries: 0,
    tokensBefore: estimateTokens(entries),
    tokensAfter: estimateTokens(entries),
  });
});

test('summarize failure or empty answer: truncation with a notice, pairs intact, never throws', async () => {
  const entries = longThread();
  const failures: Array<[string, () => Promise<string>]> = [
    ['throws', async () => Promise.reject(Object.assign(new Error('Too many requests'), { name: 'ThrottlingException' }))],
    ['throws a non-error', async () => Promise.reject('boom')],
    ['answers nothing', async () => '  \n '],
  ];
  for (const [label, summarize] of failures) {
    const out = await compactContext({ summarize }, entries, {}, META);
    assert.equal(out.compacted, true, label);
    assert.equal(out.fallback, 'truncated', label);
    assert.equal(out.summaryTokens, 0, label);
    assert.ok(out.error, label);
    const [notice, ack, ...recent] = out.entries;
    assert.equal(textOf(notice!.content), TRUNCATION_NOTICE, label);
    assert.equal(notice!.role, 'user');
    assert.equal(ack!.role, 'assistant');
    assert.deepEqual(recent, entries.slice(out.removedEntries), label);
    assert.ok(isUserText(recent[0]), label);
    assert.deepEqual(orphanedResults(recent), [], label);
    assertBedrockValid(sendable(out.entries), label);
    assert.equal(needsCompaction(out.entries, {}), false, label);
  }
  const thrown = await compactContext({ summarize: async () => Promise.reject(new Error('x')) }, entries, {}, META);
  assert.equal(thrown.error, 'Error: x');
});

test('bedrockSummarizer: one Converse call with the system prompt and the transcript, returns the text', async () => {
  const fake = await startBedrockFake();
  const bedrock = new BedrockRuntimeClient({
    endpoint: fake.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
  });
  try {
    const summarize = bedrockSummarizer({ bedrock, modelId: MODEL, maxOutputTokens: 2_000 });
    fake.script({ text: '- Decided to use Postgres.\n- Open: migrate users table.' });
    const answer = await summarize({ system: 'SYSTEM PROMPT', transcript: '[1] user:\nalice: use Postgres' });
    assert.equal(answer, '- Decided to use Postgres.\n- Open: migrate users table.');
    const request = fake.requests[0]!;
    assert.equal(request.operation, 'converse');
    assert.equal(request.modelId, MODEL);
    assert.deepEqual(request.body.system, [{ text: 'SYSTEM PROMPT' }]);
    assert.equal(request.body.messages?.length, 1);
    assert.equal(request.body.messages?.[0]?.role, 'user');
    assert.match(request.body.messages?.[0]?.content?.[0]?.text ?? '', /<transcript>\n\[1\] user:\nalice: use Postgres\n<\/transcript>/);
    assert.equal(request.body.inferenceConfig?.maxTokens, 2_000);

    // Wired into compactContext: the transcript goes to the model, its answer becomes the summary.
    const entries = longThread();
    fake.script({ text: 'the model summary' });
    const out = await compactContext({ summarize }, entries, {}, META);
    assert.equal(out.fallback, undefined);
    assert.match(textOf(out.entries[0]!.content), /\n\nthe model summary$/);
    const sent = fake.requests[1]!;
    assert.deepEqual(sent.body.system, [{ text: COMPACTION_SYSTEM_PROMPT }]);
    assert.ok(sent.body.messages?.[0]?.content?.[0]?.text?.includes('→ tool(read_file, {"path":"src/module-0.ts"})'));

    // A model error becomes the truncation fallback.
    fake.script({ error: { type: 'ValidationException', message: 'Input is too long for requested model.' } });
    const failed = await compactContext({ summarize }, entries, {}, META);
    assert.equal(failed.fallback, 'truncated');
    assert.match(failed.error ?? '', /ValidationException: Input is too long/);
  } finally {
    bedrock.destroy();
    await fake.close();
  }
});

test('archiveKey: one file per compaction under the thread directory, with key-safe characters', () => {
  assert.equal(
    archiveKey('slack:C123:1712345678.000100', '2025-06-01T10:20:30.456Z'),
    'slack/C123/1712345678.000100/context-archive/2025-06-01T10-20-30.456Z.jsonl',
  );
  assert.equal(archiveKey('slack:C1:1.5', 'a b/c'), 'slack/C1/1.5/context-archive/a-b-c.jsonl');
});
