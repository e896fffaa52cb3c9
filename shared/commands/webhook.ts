// The webhook's side of the commands: a message that is a command answered at once (stop, steer),
// every slash command and every button. Each is answered by the command's own parser and answer
// (shared/commands/answer.ts), to its sender only or, where the command says, to the whole thread.
import type { Message, Thread } from 'chat';
import { channelKeyOf, sha256Hex } from '../ids.ts';
import type { Settings } from '../settings/schema.ts';
import type { AgentChat } from '../platforms/chat.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { ControlDeps } from '../run/control.ts';
import { recentThread } from '../run/actor.ts';
import { nameOf, personFrom } from '../admission/person.ts';
import { answerCommand, commandIn, COMMANDS, isOffered } from './answer.ts';
import type { Command, CommandDeps } from './command.ts';
import { CHAT_VALUE } from '../table.ts';

export interface WebhookCommandDeps {
  control: ControlDeps;
  logger: JsonLogger;
  /** settings.json, read only for a command that depends on it; absent where the webhook reads none. */
  settings?: () => Promise<Settings>;
  /** Told of each button press's thread before its command acts (a Teams conversation is recorded). */
  onThread(adapterName: string, threadId: string): Promise<void>;
}

const NO_RECENT_THREAD =
  "I can't tell which thread you mean: you have no recent thread with me in this channel. Reply in the thread instead.";

/**
 * Slack retries interactive payloads and a signed request can be replayed within its five minutes:
 * a slash command or a button press acts once, as the Chat SDK makes events act once.
 */
export const REPLAY_WINDOW_MS = 10 * 60_000;

/** What identifies one slash command or one button press (`trigger_id` is unique per invocation). */
export function replayKey(
  adapter: string,
  kind: 'slash' | 'action',
  triggerId: string | undefined,
  raw: unknown,
  actionId?: string,
): string {
  const actionTs =
    kind === 'action'
      ? (raw as { actions?: { action_id?: string; action_ts?: string }[] } | undefined)?.actions?.find((a) => a.action_id === actionId)
          ?.action_ts
      : undefined;
  const id = triggerId ? [triggerId, actionId, actionTs].filter(Boolean).join(':') : sha256Hex(JSON.stringify(raw ?? null), actionId ?? '');
  return CHAT_VALUE.replayed(adapter, kind, id);
}

/** Whether a slash command or button press (by its replayKey) is seen for the first time; a replay is logged and ignored. */
export function firstDeliveryCheck(chat: AgentChat, logger: JsonLogger): (key: string) => Promise<boolean> {
  return async (key) => {
    const first = await chat.getState().setIfNotExists(key, true, REPLAY_WINDOW_MS);
    if (!first) logger.info('replayed delivery ignored', { key });
    return first;
  };
}

/**
 * Registers the slash commands and buttons of every command this webhook can decide, and returns
 * what answers a message that is a command answered here (true when it was one).
 */
export function wireCommands(chat: AgentChat, deps: WebhookCommandDeps): { answered(thread: Thread, message: Message): Promise<boolean> } {
  const commandDeps: CommandDeps = {
    control: deps.control,
    logger: deps.logger,
    settings: deps.settings ?? (() => Promise.reject(new Error('This webhook reads no settings.json'))),
  };
  // Without settings.json, only what the thread's actor item decides (stop, steer).
  const answerable = COMMANDS.filter((command: Command) => command.who === 'requester' || deps.settings !== undefined);
  const firstDelivery = firstDeliveryCheck(chat, deps.logger);
  // Slash commands carry a channel but no thread: they act on the caller's most recent thread there,
  // and are answered here whatever their runsAt (there is no thread to wait in). Their text is read
  // by the command's own parser as `/<command> <text>`; text a command takes none of is ignored.
  for (const command of answerable) {
    if (!command.slash) continue;
    const { slash } = command;
    chat.onSlashCommand(slash.command, async (event) => {
      if (!(await firstDelivery(replayKey(event.adapter.name, 'slash', event.triggerId, event.raw)))) return;
      const threadId = await recentThread(deps.control.actor, event.channel.id, event.user.userId);
      const args = command.parse(`${slash.command} ${event.text}`.trim()) ?? command.parse(slash.command);
      let reply: string;
      if (args === undefined) reply = `Usage: ${slash.command}${slash.hint ? ` <${slash.hint}>` : ''}`;
      else if (!threadId && command.who === 'requester') reply = NO_RECENT_THREAD;
      else {
        const who = personFrom(event.adapter.name, event.user, event.raw);
        const request = { args, who, name: nameOf(event.user), channel: event.channel.id, ...(threadId ? { threadId } : {}) };
        reply = (await answerCommand(command, request, commandDeps)).text;
      }
      await event.channel.postEphemeral(event.user, reply, { fallbackToDM: false });
    });
  }
  // A button on a card the runtime posted (the Stop button) sends its command to the card's thread.
  for (const command of answerable) {
    if (!command.button) continue;
    const { button } = command;
    chat.onAction(button.actionId, async (event) => {
      if (!(await firstDelivery(replayKey(event.adapter.name, 'action', event.triggerId, event.raw, event.actionId)))) return;
      await deps.onThread(event.adapter.name, event.threadId);
      const request = {
        args: command.parse(button.text),
        who: personFrom(event.adapter.name, event.user, event.raw),
        name: nameOf(event.user),
        channel: channelKeyOf(event.threadId),
        threadId: event.threadId,
      };
      const answer = await answerCommand(command, request, commandDeps);
      if (!event.thread) return;
      if (answer.toThread) await event.thread.post(`${answer.text} (by ${event.user.userName || event.user.userId})`);
      else await event.thread.postEphemeral(event.user, answer.text, { fallbackToDM: false });
    });
  }
  return {
    async answered(thread, message) {
      const found = commandIn(answerable, message.text);
      if (!found || found.command.runsAt !== 'webhook' || !(await isOffered(found.command, commandDeps.settings))) return false;
      const request = {
        args: found.args,
        who: personFrom(thread.adapter.name, message.author, message.raw),
        name: nameOf(message.author),
        channel: channelKeyOf(thread.id),
        threadId: thread.id,
      };
      const answer = await answerCommand(found.command, request, commandDeps);
      if (answer.toThread) await thread.post(answer.text);
      else await thread.postEphemeral(message.author, answer.text, { fallbackToDM: false });
      return true;
    },
  };
}
