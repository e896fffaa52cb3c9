// What the webhook does with a chat message: the bot subscribes to threads it is mentioned in, and
// every prompt (a mention, or any message in a subscribed thread) goes to the FIFO inbox. Nothing
// else happens in the request, so Slack gets its ack in well under 3 s.
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Message, Thread } from 'chat';
import { channelKeyOf, dedupIdFor, parseThreadId, sha256Hex } from '../ids.ts';
import { promptSchema, promptTextProblem, type Prompt } from '../schemas.ts';
import type { AgentChat } from '../platforms/chat.ts';
import { platformNamed } from '../platforms/platforms.ts';
import type { JsonLogger } from '../observability/log.ts';
import { MAX_STEER_BYTES, parseControl, steerThread, stopThread, STOP_ACTION, type Control, type ControlDeps } from '../run/control.ts';
import { getActor, MAX_PENDING_STEERS, recentThread, rememberRecentThread } from '../run/actor.ts';
import { contextText } from '../context/context-text.ts';
import { controlRefusal, workspaceOf, type ControlRefusal, type Person } from '../policy/access.ts';
import { CHAT_VALUE } from '../table.ts';

export interface IngressDeps {
  enqueue(prompt: Prompt): Promise<void>;
  control: ControlDeps;
  logger: JsonLogger;
  /** The answer to `/usage` for someone in a channel (with their most recent thread there, if any). */
  usage?(request: UsageRequest): Promise<string>;
}

export interface UsageRequest {
  who: Person;
  /** `adapter:channel` */
  channel: string;
  threadId?: string;
}

const REPLIES = {
  stopped: 'Stopped.',
  nothingToStop: 'Nothing is running in this thread.',
  steered: "Got it: I'll take that into account after the current step.",
  nothingToSteer: 'Nothing is running here, so there is nothing to steer. Send it as a normal message instead.',
  steerTooLong: `Steering is for short course corrections (at most ${MAX_STEER_BYTES / 1024} KB). Send longer instructions as a normal message: it runs after the current one.`,
  steerFull: `${MAX_PENDING_STEERS} steering messages are already waiting for the next step. Wait for it, or stop the run.`,
  noRecentThread: "I can't tell which thread you mean: you have no recent thread with me in this channel. Reply in the thread instead.",
};

const REFUSED: Record<ControlRefusal, string> = {
  'not-allowed': "Sorry, you're not on the list of people who may use me here, so you can't stop or steer my runs. An admin can add you.",
  'not-requester': 'Sorry, only the person who asked for this, or an admin, can stop or steer it.',
};

/** Who sent a control: steer text reaches the model under its author's name, like any message. */
type ControlAuthor = { userId: string; userName?: string; fullName?: string };
const authorName = (author: ControlAuthor) => author.userName || author.fullName || author.userId;

/**
 * Stop or steer the thread's running run, if the settings.json `access` the thread was last
 * admitted under lets `author` (sending `raw`, the platform payload) control it.
 */
async function applyControl(deps: IngressDeps, threadId: string, control: Control, author: ControlAuthor, raw: unknown): Promise<string> {
  const actor = await getActor(deps.control.actor, threadId);
  const run = actor?.status === 'running' ? actor.current : undefined;
  if (!run) return control.kind === 'stop' ? REPLIES.nothingToStop : REPLIES.nothingToSteer;
  const { adapter } = parseThreadId(threadId);
  const who = { adapter, userId: author.userId, workspace: workspaceOf(adapter, raw) };
  const refusal = controlRefusal(actor?.control, run.prompt.author.userId, who);
  if (refusal) {
    deps.logger.warn(`${control.kind} refused`, {
      threadId,
      runId: run.runId,
      user: who.userId,
      workspace: who.workspace,
      reason: refusal,
    });
    return REFUSED[refusal];
  }
  if (control.kind === 'stop') {
    return (await stopThread(deps.control, threadId, undefined, run.runId)) === 'stopped' ? REPLIES.stopped : REPLIES.nothingToStop;
  }
  const steered = await steerThread(deps.control, threadId, contextText(authorName(author), control.text), run.runId);
  return { queued: REPLIES.steered, idle: REPLIES.nothingToSteer, 'too-long': REPLIES.steerTooLong, full: REPLIES.steerFull }[steered];
}

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

/** Only what a later step needs of the platform payload (the workspace for Slack's native streaming; Teams' conversation). */
function slimRaw(raw: unknown): Record<string, unknown> | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  // Slack's workspace and message keys; Teams' conversation reference (where replies go, and to whom).
  const keep = [
    'team_id',
    'team',
    'user',
    'channel',
    'ts',
    'thread_ts',
    'serviceUrl',
    'conversation',
    'channelData',
    'recipient',
    'replyToId',
  ];
  return Object.fromEntries(keep.filter((k) => r[k] !== undefined).map((k) => [k, r[k]]));
}

/**
 * The triggering message as later steps use it (its author, attachments and workspace). Its text
 * and parsed `formatted` tree would repeat `Prompt.text` twice over, so they are left out.
 */
function slimCurrentMessage(current: ReturnType<Thread['toJSON']>['currentMessage']) {
  if (!current) return undefined;
  return { ...current, text: '', formatted: { type: 'root' as const, children: [] }, raw: slimRaw(current.raw) };
}

export function toPrompt(thread: Thread, message: Message): Prompt {
  const serialized = thread.toJSON();
  const current = slimCurrentMessage(serialized.currentMessage);
  return promptSchema.parse({
    threadId: thread.id,
    messageId: message.id,
    text: message.text,
    author: { userId: message.author.userId, userName: message.author.userName || message.author.fullName || message.author.userId },
    postedAt: (message.metadata?.dateSent ?? new Date()).toISOString(),
    thread: { ...serialized, currentMessage: current },
  });
}

export function wireIngress(chat: AgentChat, deps: IngressDeps): void {
  const firstDelivery = async (key: string) => {
    const first = await chat.getState().setIfNotExists(key, true, REPLAY_WINDOW_MS);
    if (!first) deps.logger.info('replayed delivery ignored', { key });
    return first;
  };
  // Every message or action that reaches a handler was verified: its platform may learn from it (Teams
  // records where the conversation lives, the only place the bot's replies there may go), before
  // anything is enqueued, so that a run's first reply finds it.
  const rememberConversation = async (adapterName: string, threadId: string) => {
    await platformNamed(adapterName)?.received(deps.control.actor, threadId);
  };
  const admit = async (thread: Thread, message: Message) => {
    await rememberConversation(thread.adapter.name, thread.id);
    const control = parseControl(message.text);
    if (control) {
      const reply = await applyControl(deps, thread.id, control, message.author, message.raw);
      // "Stopped." is for everyone in the thread; the rest only concerns the sender.
      if (reply === REPLIES.stopped) await thread.post(reply);
      else await thread.postEphemeral(message.author, reply, { fallbackToDM: false });
      return;
    }
    const tooLong = promptTextProblem(message.text);
    if (tooLong) {
      deps.logger.warn('prompt rejected: too long', { threadId: thread.id, messageId: message.id, chars: message.text.length });
      await thread.post(`${tooLong} Please shorten it or attach it as a file.`);
      return;
    }
    const prompt = toPrompt(thread, message);
    await deps.enqueue(prompt);
    await rememberRecentThread(deps.control.actor, channelKeyOf(thread.id), message.author.userId, thread.id);
    deps.logger.info('prompt enqueued', { threadId: prompt.threadId, messageId: prompt.messageId, user: prompt.author.userId });
  };
  chat.onNewMention(async (thread, message) => {
    await thread.subscribe();
    await admit(thread, message);
  });
  chat.onSubscribedMessage(admit);
  // Slash commands carry a channel but no thread: they act on the caller's most recent thread there.
  chat.onSlashCommand(['/stop', '/steer'], async (event) => {
    if (!(await firstDelivery(replayKey(event.adapter.name, 'slash', event.triggerId, event.raw)))) return;
    const threadId = await recentThread(deps.control.actor, event.channel.id, event.user.userId);
    const control: Control = event.command === '/stop' ? { kind: 'stop' } : { kind: 'steer', text: event.text.trim() };
    let reply: string;
    if (control.kind === 'steer' && !control.text) reply = 'Usage: /steer <what to do differently>';
    else reply = threadId ? await applyControl(deps, threadId, control, event.user, event.raw) : REPLIES.noRecentThread;
    await event.channel.postEphemeral(event.user, reply, { fallbackToDM: false });
  });
  chat.onSlashCommand('/usage', async (event) => {
    if (!deps.usage || !(await firstDelivery(replayKey(event.adapter.name, 'slash', event.triggerId, event.raw)))) return;
    const threadId = await recentThread(deps.control.actor, event.channel.id, event.user.userId);
    const who = { adapter: event.adapter.name, userId: event.user.userId, workspace: workspaceOf(event.adapter.name, event.raw) };
    const reply = await deps.usage({ who, channel: event.channel.id, ...(threadId ? { threadId } : {}) });
    await event.channel.postEphemeral(event.user, reply, { fallbackToDM: false });
  });
  chat.onAction(STOP_ACTION, async (event) => {
    if (!(await firstDelivery(replayKey(event.adapter.name, 'action', event.triggerId, event.raw, event.actionId)))) return;
    await rememberConversation(event.adapter.name, event.threadId);
    const reply = await applyControl(deps, event.threadId, { kind: 'stop' }, event.user, event.raw);
    if (event.thread) {
      if (reply === REPLIES.stopped) await event.thread.post(`${reply} (by ${event.user.userName || event.user.userId})`);
      else await event.thread.postEphemeral(event.user, reply, { fallbackToDM: false });
    }
  });
}

export function sqsEnqueue(sqs: SQSClient, queueUrl: string): IngressDeps['enqueue'] {
  return async (prompt) => {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(prompt),
        MessageGroupId: prompt.threadId,
        MessageDeduplicationId: dedupIdFor(prompt.threadId, prompt.messageId),
      }),
    );
  };
}
