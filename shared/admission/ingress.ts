// What the webhook does with a chat message: the bot subscribes to threads it is mentioned in, and
// every prompt (a mention, or any message in a subscribed thread) goes to the FIFO inbox, unless it
// is a command answered at once (shared/commands/webhook.ts). Nothing else happens in the request,
// so Slack gets its ack in well under 3 s.
import { isCodeNode, stringifyMarkdown, walkAst, type Message, type Thread } from 'chat';
import { channelKeyOf } from '../ids.ts';
import { promptSchema, promptTextProblem, type Prompt } from '../contracts.ts';
import { type Settings } from '../settings/schema.ts';
import type { AgentChat } from '../platforms/chat.ts';
import { platformNamed } from '../platforms/platforms.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { ControlDeps } from '../run/control.ts';
import { rememberRecentThread } from '../run/actor.ts';
import { wireCommands } from '../commands/webhook.ts';
import { wireApprovals } from '../approvals/webhook.ts';
import type { MetricsSink } from '../observability/metrics.ts';

export interface IngressDeps {
  enqueue(prompt: Prompt): Promise<void>;
  control: ControlDeps;
  logger: JsonLogger;
  /**
   * settings.json, read only for a command that depends on it (`/usage`); absent where the function
   * reads none (the Teams webhook: Teams sends no slash commands, and its messages' commands here are
   * stop and steer, which the thread's actor item decides).
   */
  settings?: () => Promise<Settings>;
  /** Where approval decisions taken by a click are counted. */
  metrics?: MetricsSink;
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

/**
 * The words of a message as the model should read them. The platform's plain text drops code fences
 * (a shell block arrives as "sh\necho hi"), so a message holding a code block is given as Markdown,
 * fences and language kept; any other message keeps its plain text, unescaped.
 */
export function promptTextOf(message: Pick<Message, 'text' | 'formatted'>): string {
  let hasCode = false;
  walkAst(message.formatted, (node) => {
    if (isCodeNode(node)) hasCode = true;
    return node;
  });
  return hasCode ? stringifyMarkdown(message.formatted).trim() : message.text;
}

export function toPrompt(thread: Thread, message: Message): Prompt {
  const serialized = thread.toJSON();
  const current = slimCurrentMessage(serialized.currentMessage);
  return promptSchema.parse({
    threadId: thread.id,
    messageId: message.id,
    text: promptTextOf(message),
    author: { userId: message.author.userId, userName: message.author.userName || message.author.fullName || message.author.userId },
    postedAt: (message.metadata?.dateSent ?? new Date()).toISOString(),
    thread: { ...serialized, currentMessage: current },
  });
}

export function wireIngress(chat: AgentChat, deps: IngressDeps): void {
  // Every message or action that reaches a handler was verified: its platform may learn from it (Teams
  // records where the conversation lives, the only place the bot's replies there may go), before
  // anything is enqueued, so that a run's first reply finds it.
  const rememberConversation = async (adapterName: string, threadId: string) => {
    await platformNamed(adapterName)?.received(deps.control.actor, threadId);
  };
  const commands = wireCommands(chat, { ...deps, onThread: rememberConversation });
  // Approve / Deny on an approval message; nothing here runs for an ordinary message.
  wireApprovals(chat, {
    approvals: deps.control.actor,
    sfn: deps.control.sfn,
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    now: Date.now,
    onThread: rememberConversation,
  });
  const admit = async (thread: Thread, message: Message) => {
    await rememberConversation(thread.adapter.name, thread.id);
    if (await commands.answered(thread, message)) return;
    const tooLong = promptTextProblem(promptTextOf(message));
    if (tooLong) {
      deps.logger.warn('prompt rejected: too long', { threadId: thread.id, messageId: message.id, chars: message.text.length });
      await thread.post(`${tooLong} Please shorten it or attach it as a file.`);
      return;
    }
    const prompt = toPrompt(thread, message);
    // Independent writes, at once: each is a round trip inside the platform's ack.
    await Promise.all([
      deps.enqueue(prompt),
      rememberRecentThread(deps.control.actor, channelKeyOf(thread.id), message.author.userId, thread.id),
    ]);
    deps.logger.info('prompt enqueued', { threadId: prompt.threadId, messageId: prompt.messageId, user: prompt.author.userId });
  };
  // The subscription only has to be there before the ack (the thread's next message is routed by
  // it), not before the prompt is enqueued: the two go at once.
  chat.onNewMention(async (thread, message) => {
    await Promise.all([thread.subscribe(), admit(thread, message)]);
  });
  chat.onSubscribedMessage(admit);
}
