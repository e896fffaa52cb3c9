// The Chat SDK instance every function uses: the adapters of the platforms this deployment serves
// over our DynamoDB state adapter. concurrency 'concurrent': the SDK must never drop or serialise
// messages itself; the FIFO inbox and the actor lease do the ordering. Every adapter is wrapped in
// the secret filter here (shared/platforms/redacting-adapter.ts): whatever posts through this chat,
// its messages are redacted.
import { Chat, type Adapter, type Logger, type SerializedThread, type StateAdapter, type Thread, ThreadImpl } from 'chat';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbStateAdapter } from './chat-state.ts';
import { redactingAdapter } from './redacting-adapter.ts';
import { secretPatternsWith, type CustomSecretPattern } from '../policy/secret-filter.ts';
import type { PLATFORMS } from './platforms.ts';

/** Each platform's adapter, by its name (what its `adapter` builds, or its webhook's receiving one). */
export type PlatformAdapters = { [P in (typeof PLATFORMS)[number] as P['name']]: ReturnType<P['adapter']> };

/** Only the served platforms' adapters exist: `adapterFor` says so when a thread's is missing. */
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

export function createAgentChat(deps: ChatDeps): AgentChat {
  const served = Object.entries(deps.adapters).filter((entry): entry is [string, Adapter] => entry[1] !== undefined);
  if (served.length === 0) throw new Error('No chat platform configured: set up at least one platform (see docs/deploy.md)');
  const stored = createDynamoDbStateAdapter({ client: deps.db, tableName: deps.tableName });
  const state = deps.state ? deps.state(stored) : stored;
  const custom = deps.secretPatterns;
  const secrets = async () => secretPatternsWith(custom ? await custom() : undefined);
  const adapters = Object.fromEntries(served.map(([name, adapter]) => [name, redactingAdapter(adapter, secrets, state)]));
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
