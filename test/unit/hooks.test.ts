// Hooks below the steps: the settings.json schema and its messages, the answer contract (exit codes,
// stdout JSON, a lambda's payload) and how the hooks of one event decide together. The whole path
// (a command in the sandbox, an operator's Lambda, the audit record) is test/e2e/approvals.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commandAnswer, lambdaAnswer, type HookAnswer, type HookInput } from '../../shared/hooks/answer.ts';
import { runHooks, type HookRunner } from '../../shared/hooks/run.ts';
import { hookSchema, hooksFor, hooksForRun } from '../../shared/hooks/settings.ts';
import { settingsSchema } from '../../shared/settings/schema.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { SECRET_PATTERNS } from '../../shared/policy/secret-filter.ts';

const ARN = 'arn:aws:lambda:us-east-1:123456789012:function:org-policy';
const problems = (value: unknown) => {
  const parsed = hookSchema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

test('settings: a hook has one target, a known event, a tool only on tool events, a command only beside a sandbox tool call; defaults', () => {
  assert.deepEqual(hookSchema.parse({ event: 'PreToolUse', tool: 'bash', command: 'sh check.sh' }), {
    event: 'PreToolUse',
    tool: 'bash',
    command: 'sh check.sh',
    timeoutSeconds: 10,
    failClosed: false,
  });
  assert.deepEqual(problems({ event: 'PreToolUse', command: 'a', lambda: ARN }), [
    ': a hook has exactly one target: "command" or "lambda"',
  ]);
  assert.deepEqual(problems({ event: 'PreToolUse' }), [': a hook has exactly one target: "command" or "lambda"']);
  assert.match(problems({ event: 'BeforeEverything', lambda: ARN })[0]!, /^event: must be one of UserPromptSubmit, PreToolUse/);
  assert.deepEqual(problems({ event: 'Stop', tool: 'bash', lambda: ARN }), [
    'tool: "tool" narrows PreToolUse and PostToolUse hooks only, not Stop',
  ]);
  assert.match(
    problems({ event: 'UserPromptSubmit', command: 'x' })[0]!,
    /^command: a command hook runs in the sandbox .* must be a "lambda"/,
  );
  assert.match(problems({ event: 'Stop', lambda: 'org-policy' })[0]!, /^lambda: must be a Lambda function ARN/);
  assert.match(problems({ event: 'Stop', lambda: ARN, timeoutSeconds: 0 })[0]!, /^timeoutSeconds:/);
  assert.match(problems({ event: 'Stop', lambda: ARN, extra: 1 })[0]!, /extra/);
  // settings.json: deployment-wide and per channel; a channel's are added to the deployment's.
  const settings = settingsSchema.parse({
    hooks: [{ event: 'Stop', lambda: ARN }],
    channels: { 'slack:C1': { hooks: [{ event: 'PostToolUse', tool: 'web_*', lambda: ARN }] } },
  });
  const hooks = hooksForRun(settings.hooks, settings.channels['slack:C1']?.hooks);
  assert.deepEqual(
    hooks.map((h) => h.event),
    ['Stop', 'PostToolUse'],
  );
  assert.equal(hooksFor(hooks, 'PostToolUse', { tool: 'web_fetch' }).length, 1);
  assert.equal(hooksFor(hooks, 'PostToolUse', { tool: 'bash' }).length, 0);
  assert.equal(hooksFor(hooks, 'PostToolUse', { tool: 'web_fetch', kind: 'command' }).length, 0);
  assert.deepEqual(settingsSchema.parse({}).hooks, []);
});

test('answers: exit 0 allows (stdout JSON may rewrite, add context, replace, continue or ask approval), 2 blocks with stderr, others and timeouts are errors', () => {
  const ended = (exitCode: number | null, stdout = '', stderr = '', timedOut = false) =>
    commandAnswer({ exitCode, stdout, stderr, timedOut });
  assert.deepEqual(ended(0), { kind: 'allow' });
  assert.deepEqual(ended(0, '{"input":{"command":"ls"}}\n'), { kind: 'allow', input: { command: 'ls' } });
  assert.deepEqual(ended(0, '{"context":"note"}'), { kind: 'allow', context: 'note' });
  assert.deepEqual(ended(0, '{"decision":"approve"}'), { kind: 'allow', approve: true });
  assert.deepEqual(ended(2, '', 'no rm here\n'), { kind: 'block', reason: 'no rm here' });
  assert.deepEqual(ended(2), { kind: 'block', reason: 'a hook blocked it (no reason given)' });
  assert.deepEqual(ended(1, '', 'Traceback\nKeyError: x'), { kind: 'error', problem: 'it exited with 1: KeyError: x' });
  assert.deepEqual(ended(null, '', '', true), { kind: 'error', problem: 'it timed out', timedOut: true });
  assert.equal(ended(0, 'allowed!').kind, 'error', 'stdout that is not an answer object');
  assert.match((ended(0, '{"inputs":{}}') as { problem: string }).problem, /not a hook answer/);
  // A lambda's payload is the same answer object; block is a decision there.
  assert.deepEqual(lambdaAnswer('null', undefined), { kind: 'allow' });
  assert.deepEqual(lambdaAnswer('{"decision":"block","reason":"DLP: card number"}', undefined), {
    kind: 'block',
    reason: 'DLP: card number',
  });
  assert.deepEqual(lambdaAnswer('{"continue":"check the tests"}', undefined), { kind: 'allow', continue: 'check the tests' });
  assert.deepEqual(lambdaAnswer('{"errorMessage":"boom"}', 'Unhandled'), { kind: 'error', problem: 'the function failed (Unhandled)' });
});

const input: HookInput = {
  event: 'PreToolUse',
  runId: 'r1',
  threadId: 'slack:C1:1.2',
  channel: 'slack:C1',
  user: { id: 'U1', name: 'u' },
  tool: { name: 'bash', toolUseId: 'tu-1', input: { command: 'ls' } },
};
const deps = { logger: createLogger({ level: 'silent' }), now: () => 0, secrets: SECRET_PATTERNS };
const hook = (name: string, failClosed = false) => hookSchema.parse({ event: 'PreToolUse', command: name, failClosed });
const answering =
  (answers: Record<string, HookAnswer>, seen: unknown[] = []): HookRunner =>
  async (h, given) => {
    seen.push(given.tool?.input);
    return answers[h.command!]!;
  };

test('runHooks: a rewrite is what the next hook sees; the first block stops the rest; an error passes unless failClosed; text for the model is secret-filtered', async () => {
  const seen: unknown[] = [];
  const rewrite = await runHooks(
    deps,
    [hook('a'), hook('b'), hook('c')],
    answering(
      {
        a: { kind: 'allow', input: { command: 'ls -la' } },
        b: { kind: 'error', problem: 'it exited with 1' },
        c: { kind: 'allow', approve: true, context: 'key AKIAIOSFODNN7EXAMPLE seen' },
      },
      seen,
    ),
    input,
  );
  assert.deepEqual(seen, [{ command: 'ls' }, { command: 'ls -la' }, { command: 'ls -la' }]);
  assert.deepEqual(rewrite.input, { command: 'ls -la' });
  assert.equal(rewrite.approve, true);
  assert.equal(rewrite.blocked, undefined);
  assert.doesNotMatch(rewrite.context!, /AKIAIOSFODNN7EXAMPLE/);
  assert.deepEqual(
    rewrite.notes.map((n) => [n.target, n.outcome]),
    [
      ['command: a', 'changed'],
      ['command: b', 'error'],
      ['command: c', 'approval'],
    ],
  );

  const ran: string[] = [];
  const blocked = await runHooks(
    deps,
    [hook('a'), hook('b')],
    async (h) => {
      ran.push(h.command!);
      return { kind: 'block', reason: 'no' };
    },
    input,
  );
  assert.equal(blocked.blocked, 'no');
  assert.deepEqual(ran, ['a'], 'the first block stops the rest');

  const closed = await runHooks(
    deps,
    [hook('slow', true)],
    answering({ slow: { kind: 'error', problem: 'it timed out', timedOut: true } }),
    input,
  );
  assert.equal(closed.blocked, 'a PreToolUse hook failed (it timed out) and is set to fail closed');
  assert.equal(closed.notes[0]!.outcome, 'timeout');
  // A runner that throws (the sandbox went away) is a hook error like any other.
  const thrown = await runHooks(deps, [hook('x')], async () => Promise.reject(new Error('sandbox unreachable')), input);
  assert.deepEqual([thrown.blocked, thrown.notes[0]!.outcome, thrown.notes[0]!.problem], [undefined, 'error', 'sandbox unreachable']);
});
