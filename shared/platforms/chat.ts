// The Chat SDK instance every function uses: the adapters of the platforms this deployment serves
// (Slack, Teams or both) over our DynamoDB state adapter. concurrency 'concurrent': the SDK must never
// drop or serialise messages itself; the FIFO inbox and the actor lease do the ordering. Every
// adapter is wrapped in the secret filter here (shared/platforms/redacting-adapter.ts): whatever posts through
// this chat, its messages are redacted.
import { Chat, type Adapter, type Attachment, type Logger, type SerializedThread, type Thread, ThreadImpl } from 'chat';
import { createSlackAdapter } from '@chat-adapter/slack';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbStateAdapter } from './chat-state.ts';
import { redactingAdapter } from './redacting-adapter.ts';
import { secretPatternsWith, type CustomSecretPattern } from '../policy/secret-filter.ts';
import type { SlackCredentials } from './slack/credentials.ts';

export interface ChatDeps {
  /** The platforms served: at least one. */
  slack?: SlackCredentials;
  /** The Teams webhook's full adapter (shared/platforms/teams/adapter.ts), or elsewhere the Connector adapter (shared/platforms/teams/connector.ts). */
  teams?: TeamsAdapter;
  db: DynamoDBDocumentClient;
  tableName: string;
  logger: Logger;
  userName?: string;
  /** Base URL of the Slack Web API; defaults to SLACK_API_URL, then slack.com. */
  slackApiUrl?: string;
  streamUpdateIntervalMs?: number;
  /** The deployment's own secret patterns (settings.json secretPatterns), redacted with the built-in ones; none when absent. */
  secretPatterns?: () => Promise<readonly CustomSecretPattern[]>;
}

export type SlackAdapter = ReturnType<typeof createSlackAdapter>;
/**
 * Either Teams adapter: they share thread ids and the name `teams`. The Connector adapter checks a
 * file's download against the conversation of the thread it was posted in.
 */
export type TeamsAdapter = Adapter & { rehydrateAttachment?(attachment: Attachment, threadId?: string): Attachment };
/** Only the configured platforms' adapters exist: ask `hasPlatform` before using one by name. */
export type AgentChat = Chat<{ slack: SlackAdapter; teams: TeamsAdapter }>;
export type Platform = 'slack' | 'teams';

export function hasPlatform(chat: AgentChat, platform: Platform): boolean {
  return Boolean((chat.getAdapter as (name: string) => Adapter | undefined)(platform));
}

export function createAgentChat(deps: ChatDeps): AgentChat {
  if (!deps.slack && !deps.teams) throw new Error('No chat platform configured: set up Slack, Teams or both');
  const state = createDynamoDbStateAdapter({ client: deps.db, tableName: deps.tableName });
  const custom = deps.secretPatterns;
  const secrets = async () => secretPatternsWith(custom ? await custom() : undefined);
  const adapters: Partial<{ slack: SlackAdapter; teams: TeamsAdapter }> = {};
  if (deps.slack) {
    const slack = createSlackAdapter({
      botToken: deps.slack.botToken,
      signingSecret: deps.slack.signingSecret,
      apiUrl: deps.slackApiUrl,
      logger: deps.logger.child('slack'),
    });
    adapters.slack = redactingAdapter(slack, secrets, state);
  }
  if (deps.teams) adapters.teams = redactingAdapter(deps.teams, secrets, state);
  const chat = new Chat({
    adapters: adapters as { slack: SlackAdapter; teams: TeamsAdapter },
    state,
    userName: deps.userName ?? 'agent',
    concurrency: 'concurrent',
    logger: deps.logger.child('chat'),
    streamingUpdateIntervalMs: deps.streamUpdateIntervalMs,
  });
  // Threads travel through the inbox and Step Functions as JSON; rebuilding them needs the singleton.
  chat.registerSingleton();
  return chat;
}

/** The adapter of a thread's platform, or an error naming a platform this deployment does not serve. */
export function adapterFor(chat: AgentChat, adapterName: string): Adapter {
  const adapter = (chat.getAdapter as (name: string) => Adapter | undefined)(adapterName);
  if (!adapter) throw new Error(`This deployment does not serve ${adapterName}: its credentials are not configured`);
  return adapter;
}

/** A thread serialized by `thread.toJSON()` in another process, bound to this process's chat. */
export function threadFromJSON(chat: AgentChat, json: SerializedThread): Thread {
  return ThreadImpl.fromJSON(json, adapterFor(chat, json.adapterName), chat as never);
}
