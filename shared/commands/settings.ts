// Admins change a channel's settings from the chat: `settings` shows what applies in the channel,
// `settings set <key> <json>` changes one of a few per-channel keys in settings.json, validated
// before it is written and written only over the version read (S3 If-Match), so an operator's edit
// made meanwhile is never lost. Who may use the agent stays an operator's change in the bucket.
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { isS3NotFound, isS3PreconditionFailed } from '../aws/errors.ts';
import { forChat } from '../support/display.ts';
import { ROOT_KEYS } from '../ids.ts';
import { settingsSchema, type Settings } from '../settings/schema.ts';
import { runReachOf } from '../reach/run-reach.ts';
import type { StoreDeps } from '../context/store.ts';
import { issueLines } from '../support/validation.ts';
import { defineCommand, storeOf } from './command.ts';

/** What an admin may change from the chat: the per-channel overrides of `channels`. */
export const CHANNEL_SETTING_KEYS = [
  'agent',
  'queueMode',
  'model.id',
  'model.temperature',
  'model.maxOutputTokens',
  // The channel's own web_fetch hosts and MCP servers: never secrets, always under web_fetch's address rules.
  'webFetch.allow',
  'mcpServers',
] as const;

type SettingsArgs = { kind: 'show' } | { kind: 'set'; key: string; value: string };

/** `settings` or `settings set <key> <json>`. */
function parseSettings(text: string): SettingsArgs | undefined {
  if (/^settings$/i.test(text)) return { kind: 'show' };
  const set = /^settings\s+set\s+(\S+)\s+([\s\S]+)$/i.exec(text);
  return set ? { kind: 'set', key: set[1]!, value: set[2]!.trim() } : undefined;
}

/** The settings that apply in `channelKey`: its overrides merged in, other channels' left out. */
export function effectiveSettings(settings: Settings, channelKey: string): Record<string, unknown> {
  const { channels, access, ...rest } = settings;
  const channel = channels[channelKey] ?? {};
  const reach = runReachOf(settings, channelKey);
  return {
    ...rest,
    model: { ...rest.model, ...channel.model },
    queueMode: channel.queueMode ?? rest.queueMode,
    agent: channel.agent ?? rest.agent ?? null,
    webFetch: { allow: reach?.webFetch?.allow ?? [] },
    mcpServers: Object.fromEntries((reach?.mcpServers ?? []).map(({ name, ...server }) => [name, server])),
    access: { ...access, locked: undefined },
  };
}

/** The settings as JSON in a code block: their strings (secret patterns, prompts) shown inert (shared/support/display.ts). */
export const showSettingsText = (settings: Settings, channelKey: string): string =>
  `Settings in this channel (\`${forChat(channelKey)}\`):\n\`\`\`\n${forChat(JSON.stringify(effectiveSettings(settings, channelKey), null, 2))}\n\`\`\``;

/** Sets `key` of `channels[channelKey]` in settings.json; returns what to tell the admin. */
export async function setChannelSetting(store: StoreDeps, channelKey: string, key: string, valueJson: string): Promise<string> {
  if (!(CHANNEL_SETTING_KEYS as readonly string[]).includes(key)) {
    return `I can change only ${CHANNEL_SETTING_KEYS.map((k) => `\`${k}\``).join(', ')} from the chat; the rest is changed in settings.json in the data bucket.`;
  }
  let value: unknown;
  try {
    value = JSON.parse(valueJson);
  } catch {
    return `The value must be JSON (a string in double quotes, like \`"interrupt"\`), not ${valueJson.slice(0, 100)}.`;
  }
  let current: { json: Record<string, unknown>; etag?: string };
  try {
    current = await readSettingsFile(store);
  } catch (error) {
    if (error instanceof SyntaxError)
      return 'settings.json in the data bucket is not valid JSON, so I will not change it: fix it there first.';
    throw error;
  }
  const channels = { ...(current.json.channels as Record<string, Record<string, unknown>> | undefined) };
  const channel = { ...channels[channelKey] };
  if (key.startsWith('model.')) channel.model = { ...(channel.model as Record<string, unknown> | undefined), [key.slice(6)]: value };
  else if (key === 'webFetch.allow') channel.webFetch = { ...(channel.webFetch as Record<string, unknown> | undefined), allow: value };
  else channel[key] = value;
  const next = { ...current.json, channels: { ...channels, [channelKey]: channel } };
  const parsed = settingsSchema.safeParse(next);
  if (!parsed.success) return `Not changed: settings.json would be invalid (${issueLines(parsed.error.issues).join('; ')}).`;
  try {
    await store.s3.send(
      new PutObjectCommand({
        Bucket: store.bucket,
        Key: ROOT_KEYS.settings,
        Body: `${JSON.stringify(next, null, 2)}\n`,
        ContentType: 'application/json',
        ...(current.etag ? { IfMatch: current.etag } : { IfNoneMatch: '*' }),
      }),
    );
  } catch (error) {
    if (isS3PreconditionFailed(error)) return 'Not changed: settings.json changed while I was editing it. Please try again.';
    throw error;
  }
  return `Set \`${key}\` to \`${JSON.stringify(value)}\` in this channel (\`${channelKey}\`). It applies within a minute.`;
}

async function readSettingsFile(store: StoreDeps): Promise<{ json: Record<string, unknown>; etag?: string }> {
  try {
    const out = await store.s3.send(new GetObjectCommand({ Bucket: store.bucket, Key: ROOT_KEYS.settings }));
    const json: unknown = JSON.parse((await out.Body?.transformToString('utf8')) ?? '{}');
    if (!json || typeof json !== 'object' || Array.isArray(json)) throw new SyntaxError('not an object');
    return { json: json as Record<string, unknown>, etag: out.ETag };
  } catch (error) {
    if (isS3NotFound(error)) return { json: {} };
    throw error;
  }
}

/** Admins see what applies in the channel, or change one of its keys. */
export const settingsCommand = defineCommand({
  name: 'settings',
  parse: parseSettings,
  runsAt: 'dispatch',
  who: 'admin',
  refused: 'Sorry, only admins can see or change my settings from the chat.',
  async answer({ args, channel, threadId, who }, deps) {
    if (args.kind === 'show') return { text: showSettingsText(await deps.settings(), channel) };
    const answer = await setChannelSetting(storeOf(deps), channel, args.key, args.value);
    deps.logger.info('settings command', { threadId, user: who?.userId, command: args.kind, key: args.key, answer });
    return { text: answer };
  },
});
