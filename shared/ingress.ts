// What the webhook does with a chat message: the bot subscribes to threads it is mentioned in, and
// every prompt (a mention, or any message in a subscribed thread) goes to the FIFO inbox. Nothing
// else happens in the request, so Slack gets its ack in well under 3 s.
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Message, Thread } from 'chat';
import { channelKeyOf, dedupIdFor } from './ids.ts';
import { promptSchema, promptTextProblem, type Prompt } from './schemas.ts';
import type { AgentChat } from './chat.ts';
import type { JsonLogger } from './log.ts';
import { MAX_STEER_BYTES, parseControl, steerThread, stopThread, STOP_ACTION, type Control, type ControlDeps } from './control.ts';
import { MAX_PENDING_STEERS, recentThread, rememberRecentThread } from './actor.ts';
import { contextText } from './context-text.ts';

export interface IngressDeps {
  enqueue(prompt: Prompt): Promise<void>;
  control: ControlDeps;
  logger: JsonLogger;
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

/** Who sent a control: steer text reaches the model under its author's name, like any message. */
type ControlAuthor = { userId: string; userName?: string; fullName?: string };
const authorName = (author: ControlAuthor) => author.userName || author.fullName || author.userId;

async function applyControl(deps: IngressDeps, threadId: string, control: Control, author: ControlAuthor): Promise<string> {
  if (control.kind === 'stop') return (await stopThread(deps.control, threadId)) === 'stopped' ? REPLIES.stopped : REPLIES.nothingToStop;
  const steered = await steerThread(deps.control, threadId, contextText(authorName(author), control.text));
  return { queued: REPLIES.steered, idle: REPLIES.nothingToSteer, 'too-long': REPLIES.steerTooLong, full: REPLIES.steerFull }[steered];
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
  const admit = async (thread: Thread, message: Message) => {
    const control = parseControl(message.text);
    if (control) {
      const reply = await applyControl(deps, thread.id, control, message.author);
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
    if (thread.adapter.name === 'teams')
      await (await import('./teams-conversations.ts')).rememberTeamsConversation(deps.control.actor, thread.id);
    deps.logger.info('prompt enqueued', { threadId: prompt.threadId, messageId: prompt.messageId, user: prompt.author.userId });
  };
  chat.onNewMention(async (thread, message) => {
    await thread.subscribe();
    await admit(thread, message);
  });
  chat.onSubscribedMessage(admit);
  // Slash commands carry a channel but no thread: they act on the caller's most recent thread there.
  chat.onSlashCommand(['/stop', '/steer'], async (event) => {
    const threadId = await recentThread(deps.control.actor, event.channel.id, event.user.userId);
    const control: Control = event.command === '/stop' ? { kind: 'stop' } : { kind: 'steer', text: event.text.trim() };
    let reply: string;
    if (control.kind === 'steer' && !control.text) reply = 'Usage: /steer <what to do differently>';
    else reply = threadId ? await applyControl(deps, threadId, control, event.user) : REPLIES.noRecentThread;
    await event.channel.postEphemeral(event.user, reply, { fallbackToDM: false });
  });
  chat.onAction(STOP_ACTION, async (event) => {
    const reply = await applyControl(deps, event.threadId, { kind: 'stop' }, event.user);
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
