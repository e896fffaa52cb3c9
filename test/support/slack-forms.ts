// Slash commands and button presses as Slack sends them: form-encoded and signed, in the shapes of
// the recorded payloads (test/fixtures/chat-sdk-replay).
import { readFileSync } from 'node:fs';
import { signSlackRequest } from '../../packages/local-cloud/src/slack/index.ts';
import { SIGNING_SECRET, type TestStack } from './local-stack.ts';

const fixtureDir = new URL('../fixtures/chat-sdk-replay/', import.meta.url);

/** A recorded slash command payload (`slashCommand`) and a recorded button press (`action`). */
export const recordedSlashCommand = () => JSON.parse(readFileSync(new URL('slash-commands/slack.json', fixtureDir), 'utf8')).slashCommand;
export const recordedAction = () => JSON.parse(readFileSync(new URL('actions-reactions/slack.json', fixtureDir), 'utf8')).action;

export async function postForm(stack: TestStack, fields: Record<string, string>): Promise<Response> {
  const body = new URLSearchParams(fields).toString();
  return fetch(stack.cloud.slackEventsUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...signSlackRequest(body, SIGNING_SECRET) },
    body,
  });
}

let presses = 0;

/**
 * The recorded button press, as `user` pressing the button `actionId` (with `value`) on `card` in a
 * thread. Each press is a new interaction, with its own trigger id and time, as Slack sends them.
 */
export function buttonPress(options: { channel: string; threadTs: string; cardTs: string; user: string; actionId: string; value: string }) {
  const recorded = recordedAction();
  const press = ++presses;
  return {
    ...recorded,
    trigger_id: `${recorded.trigger_id}.${press}`,
    team: { id: 'T0LOCAL', domain: 'local' },
    user: { ...recorded.user, id: options.user, team_id: 'T0LOCAL' },
    container: { ...recorded.container, message_ts: options.cardTs, channel_id: options.channel, thread_ts: options.threadTs },
    channel: { id: options.channel, name: 'local' },
    message: { ...recorded.message, user: 'U0LOCALBOT', ts: options.cardTs, thread_ts: options.threadTs },
    actions: [{ ...recorded.actions[0], action_id: options.actionId, value: options.value, action_ts: `${Date.now() / 1000}` }],
  };
}
