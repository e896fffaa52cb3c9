// What the webhook does with a chat message: the bot subscribes to threads it is mentioned in, and
// every prompt (a mention, or any message in a subscribed thread) goes to the FIFO inbox. Nothing
// else happens in the request, so Slack gets its ack in well under 3 s.
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Message, Thread } from 'chat';
import { dedupIdFor } from './ids.ts';
import { MAX_PROMPT_CHARS, promptSchema, type Prompt } from './schemas.ts';
import type { AgentChat } from './chat.ts';
import type { JsonLogger } from './log.ts';

export interface IngressDeps {
  enqueue(prompt: Prompt): Promise<void>;
  logger: JsonLogger;
}

/** Only what a later step needs of the platform payload (the workspace, for native streaming). */
function slimRaw(raw: unknown): Record<string, unknown> | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const keep = ['team_id', 'team', 'user', 'channel', 'ts', 'thread_ts'];
  return Object.fromEntries(keep.filter((k) => r[k] !== undefined).map((k) => [k, r[k]]));
}

export function toPrompt(thread: Thread, message: Message): Prompt {
  const serialized = thread.toJSON();
  const current = serialized.currentMessage ? { ...serialized.currentMessage, raw: slimRaw(serialized.currentMessage.raw) } : undefined;
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
    if (message.text.length > MAX_PROMPT_CHARS) {
      deps.logger.warn('prompt rejected: too long', { threadId: thread.id, messageId: message.id, chars: message.text.length });
      await thread.post(`That message is ${message.text.length} characters long; the limit is ${MAX_PROMPT_CHARS}. Please shorten it or attach it as a file.`);
      return;
    }
    const prompt = toPrompt(thread, message);
    await deps.enqueue(prompt);
    deps.logger.info('prompt enqueued', { threadId: prompt.threadId, messageId: prompt.messageId, user: prompt.author.userId });
  };
  chat.onNewMention(async (thread, message) => {
    await thread.subscribe();
    await admit(thread, message);
  });
  chat.onSubscribedMessage(admit);
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
