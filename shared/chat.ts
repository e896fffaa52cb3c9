// The Chat SDK instance every function uses: the Slack adapter over our DynamoDB state adapter.
// concurrency 'concurrent': the SDK must never drop or serialise messages itself; the FIFO inbox and
// the actor lease do the ordering.
import { Chat, type Logger, type SerializedThread, type Thread, ThreadImpl } from 'chat';
import { createSlackAdapter } from '@chat-adapter/slack';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbStateAdapter } from './chat-state.ts';
import type { SlackCredentials } from './slack-credentials.ts';

export interface ChatDeps {
  credentials: SlackCredentials;
  db: DynamoDBDocumentClient;
  tableName: string;
  logger: Logger;
  userName?: string;
  /** Base URL of the Slack Web API; defaults to SLACK_API_URL, then slack.com. */
  slackApiUrl?: string;
  streamUpdateIntervalMs?: number;
}

export type AgentChat = Chat<{ slack: ReturnType<typeof createSlackAdapter> }>;

export function createAgentChat(deps: ChatDeps): AgentChat {
  const slack = createSlackAdapter({
    botToken: deps.credentials.botToken,
    signingSecret: deps.credentials.signingSecret,
    apiUrl: deps.slackApiUrl,
    logger: deps.logger.child('slack'),
  });
  const chat = new Chat({
    adapters: { slack },
    state: createDynamoDbStateAdapter({ client: deps.db, tableName: deps.tableName }),
    userName: deps.userName ?? 'agent',
    concurrency: 'concurrent',
    logger: deps.logger.child('chat'),
    streamingUpdateIntervalMs: deps.streamUpdateIntervalMs,
  });
  // Threads travel through the inbox and Step Functions as JSON; rebuilding them needs the singleton.
  chat.registerSingleton();
  return chat;
}

/** A thread serialized by `thread.toJSON()` in another process, bound to this process's chat. */
export function threadFromJSON(chat: AgentChat, json: SerializedThread): Thread {
  return ThreadImpl.fromJSON(json, chat.getAdapter('slack'), chat as never);
}
