// The chat platform contract (shared/platforms/platform.ts): each platform module satisfies it, the
// two lists agree, and everything that once switched on an adapter's name now asks the lists, so a
// platform added to them is served everywhere without touching those places.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import {
  PLATFORM_DESCRIPTORS,
  PLATFORM_NAMES,
  descriptorNamed,
  platformEnvShape,
  servedPlatforms,
} from '../../shared/platforms/descriptors.ts';
import { PLATFORMS, platformNamed, threadProblem } from '../../shared/platforms/platforms.ts';
import type { ChatPlatform, PlatformDescriptor } from '../../shared/platforms/platform.ts';
import { parseThreadId } from '../../shared/ids.ts';
import { CHANNEL_EVENT_ADAPTERS, eventScopeOf } from '../../shared/events/scope.ts';
import { workspaceOf } from '../../shared/policy/access.ts';
import { dispatchEnv, readEnv } from '../../shared/env.ts';
import { FUNCTION_ENTRIES } from '../../infra/function-entries.ts';
import { DERIVED_NAMES } from '../../infra/stack-names.ts';
import { CHAT_PLATFORMS, DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { BUNDLE_BUDGET, bundleBudgetOf } from '../../infra/constructs/agent-function.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const descriptors: readonly PlatformDescriptor[] = PLATFORM_DESCRIPTORS;
const platforms: readonly ChatPlatform[] = PLATFORMS;

/** Each platform's variables that stand in for its secret, set, as the local cloud sets them. */
const standIns = (platform: PlatformDescriptor) =>
  Object.fromEntries(platform.env.instead.map((name) => [name, `${name.toLowerCase()}-value`]));

/** What the sandbox step and reaper may ask too: none of it may need a platform's SDK. */
const DESCRIPTOR_METHODS = ['scopeOf', 'workspaceOf', 'uploadProblem', 'historyProblem'] as const;

const CHAT_METHODS = ['adapter', 'rehydrateAttachment', 'openThread', 'threadProblem', 'received'] as const;

test('each platform module satisfies the contract, and PLATFORMS is PLATFORM_DESCRIPTORS with their chat wiring, in the same order', () => {
  assert.deepEqual(
    platforms.map((p) => p.name),
    descriptors.map((p) => p.name),
  );
  assert.deepEqual(PLATFORM_NAMES, ['slack', 'teams']);
  for (const [i, platform] of platforms.entries()) {
    const descriptor = descriptors[i]!;
    // The ChatPlatform carries its descriptor as it is: one secret, one set of variables, one deployment.
    for (const key of Object.keys(descriptor) as (keyof PlatformDescriptor)[])
      assert.equal(platform[key], descriptor[key], `${platform.name}.${key}`);
    for (const method of DESCRIPTOR_METHODS) assert.equal(typeof descriptor[method], 'function', `${descriptor.name}.${method}`);
    for (const method of CHAT_METHODS) assert.equal(typeof platform[method], 'function', `${platform.name}.${method}`);
    assert.equal(platformNamed(platform.name), platform);
    assert.equal(descriptorNamed(platform.name), descriptor);
    assert.match(platform.name, /^[a-z][a-z0-9-]*$/, 'a name parseThreadId accepts as an adapter');
  }
  for (const field of ['name', 'title'] as const) {
    assert.equal(new Set(descriptors.map((p) => p[field])).size, descriptors.length, `${field}s are unique`);
  }
  const webhooks = descriptors.map((p) => p.deployment.webhook);
  for (const field of ['role', 'path', 'entry'] as const) {
    assert.equal(new Set(webhooks.map((w) => w[field])).size, webhooks.length, `webhook ${field}s are unique`);
  }
  assert.equal(webhooks.filter((w) => w.role === 'webhook').length, 1, 'one platform shares the function that answers /health');
  assert.equal(platformNamed('discord'), undefined);
});

test("each platform's secret is its zod schema: the value the deploy generates parses, a wrong one is refused without being echoed", () => {
  for (const { title, secret } of descriptors) {
    const fields = Object.keys((secret.schema as unknown as z.ZodObject).shape).sort();
    assert.deepEqual(
      [...Object.keys(secret.placeholders), secret.generated].sort(),
      fields,
      `${title}: placeholders and the generated field cover the schema`,
    );
    // What the stack writes (infra/constructs/chat-secrets.ts) is a value the functions can read, so they start before the operator fills it in.
    const deployed = { ...secret.placeholders, [secret.generated]: 'Gen3ratedRandomValue' };
    assert.deepEqual(secret.parse(JSON.stringify(deployed)), deployed, title);
    for (const field of fields) assert.ok(secret.shape.includes(`"${field}": `), `${title}: the shape shows ${field}`);
    assert.throws(
      () => secret.parse('{"leaked": "hunter2"}'),
      (error: Error) => error.message.startsWith(`The ${title} secret must be JSON ${secret.shape}`) && !error.message.includes('hunter2'),
    );
    assert.throws(() => secret.parse(undefined), /must be JSON/);
  }
});

test("each platform's variables: its secret ARN, or the stand-ins together, say where its credentials come from", () => {
  for (const platform of descriptors) {
    const { env } = platform;
    for (const name of [env.secretArn, ...env.instead]) assert.ok(name in env.shape, `${platform.name}: ${name} is one of its variables`);
    assert.ok(
      Object.keys(env.shape).every((name) => name in platformEnvShape),
      `${platform.name}: every chat function reads its variables`,
    );
    const parsed = (raw: Record<string, string>) => z.object(env.shape).parse(raw);
    const secret = env.credentials(parsed({ [env.secretArn]: 'arn:aws:secretsmanager:us-east-1:1:secret:x' }));
    assert.deepEqual(secret, { secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:x', maxAgeSeconds: 60, rereadSeconds: 10 });
    const local = env.credentials(parsed(standIns(platform)));
    assert.ok(local && 'credentials' in local, platform.name);
    assert.deepEqual(
      platform.secret.parse(JSON.stringify(local.credentials)),
      local.credentials,
      `${platform.name}: stand-ins make valid credentials`,
    );
    assert.equal(env.credentials(parsed({})), undefined);
    const [first] = env.instead;
    assert.equal(env.credentials(parsed({ [first!]: 'only-one' })), undefined, `${platform.name}: one stand-in alone is not enough`);
  }
});

test('the lists drive what once switched on the adapter name: thread ids, event folders, workspaces, which platforms a function serves', () => {
  const teamsThread = `teams:${Buffer.from('19:abc@thread.tacv2;messageid=17').toString('base64url')}:${Buffer.from('https://smba.trafficmanager.net/amer/').toString('base64url')}`;
  const samples: Record<string, { threadId: string; raw: Record<string, unknown>; workspace: string }> = {
    slack: { threadId: 'slack:C0123:1700000000.000100', raw: { team: 'T1' }, workspace: 'T1' },
    teams: { threadId: teamsThread, raw: { channelData: { tenant: { id: 'tenant-1' } } }, workspace: 'tenant-1' },
  };
  assert.deepEqual(CHANNEL_EVENT_ADAPTERS, PLATFORM_NAMES);
  for (const platform of descriptors) {
    const sample = samples[platform.name];
    assert.ok(sample, `${platform.name}: a sample thread in this test`);
    const [, channelPart, ...rest] = sample.threadId.split(':');
    const address = parseThreadId(sample.threadId);
    assert.deepEqual(address, { adapter: platform.name, ...platform.scopeOf(channelPart!, rest) });
    assert.deepEqual(eventScopeOf(`events/${platform.name}/${encodeURIComponent(address.channel)}/daily.json`), {
      kind: 'channel',
      adapterId: platform.name,
      channelId: address.channel,
      prefix: `events/${platform.name}/${encodeURIComponent(address.channel)}/`,
    });
    assert.equal(workspaceOf(platform.name, sample.raw), sample.workspace);
    // Only the platform named reads the payload.
    for (const other of descriptors.filter((p) => p !== platform)) assert.equal(workspaceOf(other.name, sample.raw), undefined);
    assert.deepEqual(servedPlatforms(standIns(platform)), [platform]);
  }
  assert.deepEqual(
    parseThreadId('matrix:room:event'),
    { adapter: 'matrix', channel: 'room', thread: 'event' },
    'an unknown platform: the plain form',
  );
  assert.deepEqual(eventScopeOf('events/matrix/room/daily.json'), { kind: 'operator' });
  assert.deepEqual(servedPlatforms(Object.assign({}, ...descriptors.map(standIns))), descriptors);
});

test('a chat function needs one platform, any of them; the error names each way to give one', () => {
  const base = { TABLE_NAME: 't', STATE_MACHINE_ARN: 'arn:sm', DATA_BUCKET: 'b' };
  for (const platform of descriptors) {
    const env = readEnv(dispatchEnv, { ...base, ...standIns(platform) });
    assert.deepEqual(servedPlatforms(env), [platform]);
  }
  assert.throws(
    () => readEnv(dispatchEnv, base),
    (error: Error) =>
      descriptors.every((p) => error.message.includes(p.env.secretArn) && p.env.instead.every((name) => error.message.includes(name))),
  );
});

test("the stack takes each platform's webhook function, secret name and bundle budget from its descriptor", () => {
  assert.deepEqual(CHAT_PLATFORMS, PLATFORM_NAMES);
  assert.deepEqual(DEFAULT_SETTINGS.chatPlatforms, PLATFORM_NAMES, 'every platform by default');
  for (const platform of descriptors) {
    const { role, entry, bundle } = platform.deployment.webhook;
    assert.equal((FUNCTION_ENTRIES as Record<string, string>)[role], entry);
    assert.ok(statSync(join(ROOT, entry)).isFile(), `${platform.name}: ${entry}`);
    const secretName = (DERIVED_NAMES as Record<string, { of(stack: string): string }>)[`${platform.name}Secret`];
    assert.equal(secretName?.of('Stack'), `Stack/${platform.title}Credentials`);
    assert.equal(bundleBudgetOf(role as keyof typeof FUNCTION_ENTRIES), bundle?.budgetBytes ?? BUNDLE_BUDGET);
  }
});

test('threads someone else named: not a thread id, or what its platform refuses', async () => {
  const context = {
    env: readEnv(dispatchEnv, { TABLE_NAME: 't', STATE_MACHINE_ARN: 'arn:sm', DATA_BUCKET: 'b', ...standIns(descriptors[0]!) }),
    // No platform here needs the table to answer these.
    store: { db: documentClient(), tableName: 't' },
    logger: createLogger({ level: 'silent' }),
  };
  assert.match((await threadProblem(context, 'not-a-thread')) ?? '', /"not-a-thread" is not a thread id/);
  assert.equal(await threadProblem(context, 'slack:C0123:1700000000.000100'), undefined);
  assert.equal(
    await threadProblem(context, 'matrix:room:event'),
    undefined,
    'an unknown platform refuses nothing: the chat has no adapter for it',
  );
  // A Teams thread whose serviceUrl is not a Bot Connector's, for a conversation nobody named: the bot's token would go there.
  const forged = `teams:${Buffer.from('a:personal').toString('base64url')}:${Buffer.from('https://attacker.example/').toString('base64url')}`;
  const teams = platformNamed('teams')!;
  const refused = await teams.threadProblem({ ...context, store: { ...context.store, db: { send: async () => ({}) } as never } }, forged);
  assert.match(refused ?? '', /attacker\.example.*nor a Bot Connector service URL/);
});

/** Every .ts file under `dir`, relative to the repository root. */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

test("nothing outside a platform's own folder names it in code: what switched on 'slack' or 'teams' asks the lists", () => {
  const ownFolders = PLATFORM_NAMES.map((name) => `shared/platforms/${name}/`);
  const quoted = new RegExp(`(['\`])(${PLATFORM_NAMES.join('|')})\\1`, 'g');
  const offenders: string[] = [];
  for (const file of ['shared', 'functions', 'infra'].flatMap(sources)) {
    if (ownFolders.some((folder) => file.startsWith(folder))) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        // Comments, and examples in what a person reads (`like "slack"`), may name a platform.
        const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '');
        if (/\bexample: /.test(code)) return;
        if (quoted.test(code)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
        quoted.lastIndex = 0;
      });
  }
  assert.deepEqual(offenders, []);
});
