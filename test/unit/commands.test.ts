// The command registry: which command each text is (one parser per command, after any mention),
// that no two commands claim the same words, that the slash forms are the Slack manifest's, and
// who may use each. (Answering in a thread, by slash command and by button: the e2e tests.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { answerCommand, commandIn, COMMANDS, isOffered } from '../../shared/commands/answer.ts';
import { defineCommand, withoutMention, type CommandDeps } from '../../shared/commands/command.ts';
import { REFUSAL_TEXTS } from '../../shared/policy/access.ts';
import { readSlackManifest } from '../../infra/slack-manifest.ts';
import { createLogger } from '../../shared/observability/log.ts';
import type { ControlDeps } from '../../shared/run/control.ts';
import { settingsSchema, type Settings } from '../../shared/settings/schema.ts';

/** Each text, and the command (with its arguments) it is; undefined: a prompt for the model. */
const SAMPLES: [string, string | undefined, unknown?][] = [
  ['stop', 'stop', {}],
  ['<@U0BOT> /stop', 'stop', {}],
  ['@threadwork Stop!', 'stop', {}],
  ['stop the build', undefined],
  ['steer use python instead', 'steer', { text: 'use python instead' }],
  ['<@U0BOT> /steer   keep it short\n', 'steer', { text: 'keep it short' }],
  ['steer', undefined],
  ['usage', 'usage', {}],
  ['/Usage', 'usage', {}],
  ['usage of memory', undefined],
  ['settings', 'settings', { kind: 'show' }],
  ['<@U0BOT> settings set queueMode "interrupt"', 'settings', { kind: 'set', key: 'queueMode', value: '"interrupt"' }],
  ['settings please', undefined],
  ['runs', 'ops', 'runs'],
  ['@bot Stop   all', 'ops', 'stop-all'],
  ['pause.', 'ops', 'pause'],
  ['RESUME', 'ops', 'resume'],
  ['pause the build', undefined],
  ['agents', 'agents', {}],
  ['<@U0BOT> Agents', 'agents', {}],
  ['agents please', undefined],
  ['disconnect orders', 'disconnect', { server: 'orders' }],
  ['<@U0BOT> Disconnect github-mcp.', 'disconnect', { server: 'github-mcp' }],
  ['disconnect the printer from the network', undefined],
  ['reason: not on a Friday', 'reason', { reason: 'not on a Friday' }],
  ['<@U0BOT> Reason:\nno uploads', 'reason', { reason: 'no uploads' }],
  ['reason about this design', undefined],
  ['hello', undefined],
];

test('each text is the one command whose words it is, after any mention of the bot; anything else is a prompt', () => {
  for (const [text, name, args] of SAMPLES) {
    const found = commandIn(COMMANDS, text);
    assert.equal(found?.command.name, name, text);
    if (name) assert.deepEqual(found?.args, args, text);
  }
});

test("no two commands claim the same words, so the registry's order does not matter", () => {
  assert.deepEqual(COMMANDS.map((c) => c.name).sort(), ['agents', 'disconnect', 'ops', 'reason', 'settings', 'steer', 'stop', 'usage']);
  for (const [text] of SAMPLES) {
    const claiming = COMMANDS.filter((c) => c.parse(withoutMention(text)) !== undefined).map((c) => c.name);
    assert.ok(claiming.length <= 1, `${text}: ${claiming.join(', ')}`);
  }
});

test("the commands' slash forms are the Slack manifest's slash commands, with the same hints", () => {
  const manifest = readSlackManifest().features.slash_commands ?? [];
  const declared = manifest.map((c) => [c.command, (c as { usage_hint?: string }).usage_hint]);
  const registered = COMMANDS.filter((c) => c.slash).map((c) => [c.slash!.command, c.slash!.hint]);
  assert.deepEqual(registered.sort(), declared.sort());
  // A slash command is read by the command's own parser, as `/<command> <text>` (text only where it has a hint).
  for (const command of COMMANDS.filter((c) => c.slash)) {
    const { command: word, hint } = command.slash!;
    assert.notEqual(command.parse(hint ? `${word} x` : word), undefined, command.name);
    if (hint) assert.equal(command.parse(word), undefined, `${command.name} without its text`);
  }
});

test('where each command is answered, and by whom it may be used', () => {
  const where = Object.fromEntries(COMMANDS.map((c) => [c.name, `${c.runsAt} ${c.who}`]));
  assert.deepEqual(where, {
    stop: 'webhook requester',
    steer: 'webhook requester',
    usage: 'dispatch anyone',
    settings: 'dispatch admin',
    ops: 'dispatch admin',
    reason: 'webhook anyone',
    agents: 'dispatch anyone',
    disconnect: 'dispatch anyone',
  });
});

const person = (userId: string) => ({ adapter: 'slack', userId, workspace: 'T1' });

function depsFor(json: Record<string, unknown>): CommandDeps & { reads: number } {
  const settings: Settings = settingsSchema.parse(json);
  const deps = {
    reads: 0,
    control: {} as ControlDeps,
    logger: createLogger({ level: 'silent' }),
    settings: async () => {
      deps.reads++;
      return settings;
    },
  };
  return deps;
}

const said = defineCommand({
  name: 'said',
  parse: (text) => (text === 'said' ? {} : undefined),
  runsAt: 'dispatch',
  who: 'anyone',
  async answer({ who }, deps) {
    return { text: `said for ${who?.userId}, ${(await deps.settings()).maxQueueDepth} deep` };
  },
});

test('anyone: whoever may use the agent in the channel; the answer reads the settings the check read', async () => {
  const deps = depsFor({ maxQueueDepth: 3, access: { users: ['slack:U1'], channels: ['slack:C1'] } });
  const request = (userId: string, channel = 'slack:C1') => ({ args: {}, who: person(userId), name: userId, channel });
  assert.deepEqual(await answerCommand(said, request('U1'), deps), { text: 'said for U1, 3 deep' });
  assert.equal(deps.reads, 1, 'settings.json read once');
  assert.deepEqual(await answerCommand(said, request('U2'), deps), { text: REFUSAL_TEXTS.user });
  assert.deepEqual(await answerCommand(said, request('U1', 'slack:C2'), deps), { text: REFUSAL_TEXTS.channel });
});

test("admin: an admins' command exists only where admins are named, and only they may use it", async () => {
  const purge = defineCommand({ ...said, name: 'purge', who: 'admin', refused: 'Only admins purge.' });
  assert.equal(await isOffered(purge, depsFor({}).settings), false, 'no admins: the words are a prompt');
  assert.equal(await isOffered(said, depsFor({}).settings), true);
  const deps = depsFor({ access: { admins: ['slack:U9'] } });
  assert.equal(await isOffered(purge, deps.settings), true);
  const request = (who?: ReturnType<typeof person>) => ({ args: {}, who, name: 'x', channel: 'slack:C1' });
  assert.deepEqual(await answerCommand(purge, request(person('U1')), deps), { text: 'Only admins purge.' });
  assert.deepEqual(await answerCommand(purge, request(undefined), deps), { text: 'Only admins purge.' }, "an event's prompt");
  assert.deepEqual(await answerCommand(purge, request(person('U9')), deps), { text: 'said for U9, 5 deep' });
});
