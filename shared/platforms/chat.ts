// The Chat SDK instance every function uses: the adapters of the platforms this deployment serves
// over our DynamoDB state adapter. concurrency 'concurrent': the SDK must never drop or serialise
// messages itself; the FIFO inbox and the actor lease do the ordering. Every adapter is wrapped in
// the secret filter here (shared/platforms/redacting-adapter.ts): whatever posts through this chat,
// its messages are redacted.
import { Chat, Message, type Adapter, type Logger, type SerializedThread, type StateAdapter, type Thread, ThreadImpl } from 'chat';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbStateAdapter } from './chat-state.ts';
import { redactingAdapter } from './redacting-adapter.ts';
import { secretPatternsWith, type CustomSecretPattern } from '../policy/secret-filter.ts';
import type { PLATFORMS } from './platforms.ts';

/** Each platform's adapter, by its name (what its `adapter` builds, or its webhook's receiving one). */
export type PlatformAdapters = { [P in (typeof PLATFORMS)[number] as P['name']]: ReturnType<P['adapter']> };

/** Only the served platforms' adapters exist. */
export type AgentChat = Chat<PlatformAdapters>;

export interface ChatDeps {
  /** The served platforms' adapters: at least one. */
  adapters: Partial<PlatformAdapters>;
  db: DynamoDBDocumentClient;
  tableName: string;
  logger: Logger;
  userName?: string;
  streamUpdateIntervalMs?: number;
  /** The deployment's own secret patterns (settings.json secretPatterns), redacted with the built-in ones; none when absent. */
  secretPatterns?: () => Promise<readonly CustomSecretPattern[]>;
  /** Narrows the state the SDK sees: the webhooks' (shared/platforms/webhook-state.ts) skips what they need not read or write. */
  state?: (state: StateAdapter) => StateAdapter;
}

/** The served platforms' adapters, each wrapped in the secret filter, over our DynamoDB state adapter. */
function servedAdapters(deps: ChatDeps): { adapters: Record<string, Adapter>; state: StateAdapter } {
  const served = Object.entries(deps.adapters).filter((entry): entry is [string, Adapter] => entry[1] !== undefined);
  if (served.length === 0) throw new Error('No chat platform configured: set up at least one platform (see docs/deploy.md)');
  const stored = createDynamoDbStateAdapter({ client: deps.db, tableName: deps.tableName });
  const state = deps.state ? deps.state(stored) : stored;
  const custom = deps.secretPatterns;
  const secrets = async () => secretPatternsWith(custom ? await custom() : undefined);
  return { adapters: Object.fromEntries(served.map(([name, adapter]) => [name, redactingAdapter(adapter, secrets, state)])), state };
}

export function createAgentChat(deps: ChatDeps): AgentChat {
  const { adapters, state } = servedAdapters(deps);
  const chat = new Chat({
    adapters: adapters as PlatformAdapters,
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

/**
 * What a run's steps post through: the served adapters and the threads rebuilt from a prompt's JSON,
 * bound to them directly. The Chat SDK's Chat class (webhook routing, handlers, locks) is for the
 * functions that receive events; leaving it out keeps the agent step's bundle small.
 */
export interface StepChat {
  /** The adapter of a served platform, or an error naming a platform this deployment does not serve. */
  adapter(adapterName: string): Adapter;
  /** A thread serialized by `thread.toJSON()` in another process. */
  thread(json: SerializedThread): Thread;
  /** The Chat SDK state the adapters and threads use. */
  state: StateAdapter;
}

export function createStepChat(deps: ChatDeps): StepChat {
  const { adapters, state } = servedAdapters(deps);
  const logger = deps.logger.child('chat');
  const adapter = (adapterName: string) => adapters[adapterName] ?? notServed(adapterName);
  return {
    adapter,
    state,
    thread: (json) =>
      new ThreadImpl({
        id: json.id,
        adapter: adapter(json.adapterName),
        stateAdapter: state,
        channelId: json.channelId,
        channelVisibility: json.channelVisibility,
        isDM: json.isDM,
        currentMessage: json.currentMessage ? Message.fromJSON(json.currentMessage) : undefined,
        logger,
        // The Chat class's default, which threads restored through it use.
        streamingUpdateIntervalMs: deps.streamUpdateIntervalMs ?? 500,
      }),
  };
}

const notServed = (adapterName: string): never => {
  throw new Error(`This deployment does not serve ${adapterName}: its credentials are not configured`);
};
