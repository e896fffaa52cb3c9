// The contract of a chat platform. A platform is one folder, shared/platforms/<name>/, with two
// exports: its descriptor (descriptor.ts), what every function and the infra know of it without
// loading its SDK (thread ids, workspaces, the files it takes, its secret and variables, its webhook
// in the stack); and its ChatPlatform (platform.ts), the descriptor plus the chat wiring (its adapter,
// attachments, channels, which threads the bot may act in). Code that once switched on an adapter's
// name iterates PLATFORM_DESCRIPTORS (shared/platforms/descriptors.ts) or PLATFORMS
// (shared/platforms/platforms.ts): two lists, because functions that never talk to chat (the sandbox
// step and reaper) read thread ids and run the tool registry too, and must not bundle the Chat SDK.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Adapter, Attachment, Logger } from 'chat';
import type * as z from 'zod';
import type { CredentialSource } from './secret-credentials.ts';

/** Where a thread id puts a thread: its channel (whose settings, memory and skills it shares) and itself. */
export interface ThreadScope {
  channel: string;
  thread: string;
}

/** The app's credentials: one Secrets Manager secret, JSON of `schema`'s shape. */
export interface PlatformSecret<S extends z.ZodType = z.ZodType, G extends string = string> {
  readonly schema: S;
  /** The field the deploy fills with a random value, so that nothing verifies until the operator stores the real one. */
  readonly generated: G;
  /** What the deploy writes into the other fields, for the operator to replace. */
  readonly placeholders: Omit<z.infer<S>, G>;
  /** The secret as an operator writes it, one line: `{"signingSecret": "...", "botToken": "xoxb-..."}`. */
  readonly shape: string;
  /** The value as the functions read it, or an error that says what it must be (never what it is). */
  parse(raw: unknown): z.infer<S>;
}

/** A secret's value as JSON of `schema`'s shape, or `shapeError` (which says what it must be, never its value). */
function parseSecret<S extends z.ZodType>(raw: unknown, schema: S, shapeError: string): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(typeof raw === 'string' ? raw : '');
  } catch {
    json = undefined;
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(shapeError);
  return parsed.data;
}

/** A platform's secret from its zod schema; `example` shows each field as the operator writes it. */
export function platformSecret<S extends z.ZodType<object>, G extends keyof z.infer<S> & string>(spec: {
  title: string;
  schema: S;
  generated: G;
  placeholders: Omit<z.infer<S>, G>;
  example: Record<keyof z.infer<S>, string>;
  /** Where the docs explain it. */
  docs: string;
}): PlatformSecret<S, G> {
  const shape = `{${Object.entries(spec.example)
    .map(([field, value]) => `"${field}": "${value}"`)
    .join(', ')}}`;
  const error = `The ${spec.title} secret must be JSON ${shape} (see ${spec.docs})`;
  return {
    schema: spec.schema,
    generated: spec.generated,
    placeholders: spec.placeholders,
    shape,
    parse: (raw) => parseSecret(raw, spec.schema, error),
  };
}

/** A platform's environment variables, read with each chat function's own (shared/env.ts). */
export interface PlatformEnv {
  readonly shape: z.ZodRawShape;
  /** The variable naming the secret's ARN: the stack sets it where a function may read that secret. */
  readonly secretArn: string;
  /** Variables that together stand in for the secret where there is none (the local cloud, tests). */
  readonly instead: readonly string[];
  /** Where this function's credentials come from; undefined where it does not serve the platform. */
  credentials(env: Record<string, unknown>): CredentialSource<unknown> | undefined;
}

/** The secret where the function has its ARN; else the credentials its stand-in variables make, if they do. */
export function credentialSourceOf<T>(
  secret: { secretArn?: string; maxAgeSeconds: number; rereadSeconds: number },
  standIn: () => T | undefined,
): CredentialSource<T> | undefined {
  const { secretArn, maxAgeSeconds, rereadSeconds } = secret;
  if (secretArn) return { secretArn, maxAgeSeconds, rereadSeconds };
  const credentials = standIn();
  return credentials === undefined ? undefined : { credentials };
}

/** The deployment settings (cdk.json) a platform's functions take variables from. */
export interface PlatformSettings {
  readonly teamsMultiTenant: boolean;
}

/** How the stack deploys a platform: its webhook route and function, its secret and outputs. */
export interface PlatformDeployment {
  readonly webhook: {
    /**
     * The stack function (a key of infra/function-entries.ts) behind the route. `webhook` is the one
     * that also answers GET /health, so it exists whatever the deployment serves; any other is
     * created only where the deployment serves its platform.
     */
    readonly role: string;
    /** Its handler module, from the repository root. */
    readonly entry: string;
    /** The POST route the platform sends to. */
    readonly path: string;
    readonly description: string;
    /** How the function verifies a request, since the platform cannot send AWS credentials (cdk-nag AwsSolutions-APIG4). */
    readonly verification: string;
    /** The stack output with the route's URL, for the platform's app settings. */
    readonly urlOutput: { readonly id: string; readonly description: string };
    /** Where the function carries the platform's own SDK: its budget over the default 1 MB, and whether it needs mime-db. */
    readonly bundle?: { readonly budgetBytes: number; readonly keepsMimeDb: boolean };
  };
  /** Why the secret has no rotation Lambda (cdk-nag AwsSolutions-SMG4). */
  readonly secretRotation: string;
  /** Variables every function serving the platform gets from the deployment settings. */
  environment?(settings: PlatformSettings): Record<string, string>;
}

/** What every function, and the infra, know of a platform without its SDK. */
export interface PlatformDescriptor {
  /** The Chat SDK adapter's name: the first part of its thread ids, its folder in the data tree and under events/, the qualifier of its ids in `access`. */
  readonly name: string;
  /** As people write it: "Slack". Also names its secret and outputs in the stack. */
  readonly title: string;
  /** The scope of a thread id `name:channelPart:rest…` (the thread id codec as far as scopes go). */
  scopeOf(channelPart: string, rest: readonly string[]): ThreadScope;
  /**
   * Whether the message `messageId` is the first of the thread `thread` (of its scope): nothing of
   * the thread can be stored before it. False when the ids cannot tell.
   */
  opensThread(thread: ThreadScope, messageId: string): boolean;
  /** The workspace of whoever sent a payload, as settings.json `access.workspaces` names it. */
  workspaceOf(raw: Readonly<Record<string, unknown>>): string | undefined;
  /** Why this file cannot be posted into the platform's threads (the upload tool, which runs where the Chat SDK may not be loaded); undefined when it can. */
  uploadProblem(file: { filename: string; mimeType?: string; bytes: number }): string | undefined;
  /** What the model is told when a channel's history cannot be read (search_channel); undefined: the error itself. */
  historyProblem(error: Error): string | undefined;
  readonly secret: PlatformSecret;
  readonly env: PlatformEnv;
  readonly deployment: PlatformDeployment;
}

/** The state table, where a platform keeps what it learns (Teams: where each conversation lives). */
export interface PlatformStore {
  db: DynamoDBDocumentClient;
  tableName: string;
}

/** What a platform's adapter and checks are built from in a function. */
export interface PlatformContext<E = Record<string, unknown>> {
  /** The function's environment, which holds this platform's variables (shared/env.ts). */
  env: E;
  store: PlatformStore;
  logger: Logger;
  /** The bot's name in its own messages. */
  userName?: string;
}

/** What posts into a channel: the Chat SDK instance. */
export interface ChannelPoster {
  channel(channelId: string): { post(message: string): Promise<{ id: string; threadId: string }> };
}

/** A post that opened a thread: the thread and the post's id. */
export interface OpenedThread {
  threadId: string;
  messageId: string;
}

/** A platform as the chat functions use it: the descriptor and its chat wiring. */
export interface ChatPlatform extends PlatformDescriptor {
  /**
   * The adapter the functions send with, from the current credentials (see handler-context/chat.ts).
   * A platform whose receiving adapter is heavy lets its webhook pass that one instead.
   */
  adapter(credentials: unknown, context: PlatformContext): Adapter;
  /** An attachment of a message in `threadId`, made downloadable through this platform's `adapter`. */
  rehydrateAttachment(adapter: Adapter, attachment: Attachment, threadId: string): Attachment;
  /** Posts `text` into a channel, which opens a thread there (an event for a channel). */
  openThread(chat: ChannelPoster, store: PlatformStore, channelId: string, text: string): Promise<OpenedThread>;
  /**
   * Why the bot may not act in a thread someone other than the platform named (an event file a
   * sandbox wrote, a bus event, a trigger); undefined when it may.
   */
  threadProblem(context: PlatformContext, threadId: string): Promise<string | undefined>;
  /** Runs for each verified inbound message or action of a thread, before anything is enqueued. */
  received(store: PlatformStore, threadId: string): Promise<void>;
}

/** `channel:thread…` as most platforms write thread ids: the channel, then the thread. */
export const plainScope = (channelPart: string, rest: readonly string[]): ThreadScope => ({ channel: channelPart, thread: rest.join(':') });

/** Opening a thread where a channel post starts one and its thread id says so (the Chat SDK's own). */
export async function postToChannel(chat: ChannelPoster, name: string, channelId: string, text: string): Promise<OpenedThread> {
  const sent = await chat.channel(`${name}:${channelId}`).post(text);
  return { threadId: sent.threadId, messageId: sent.id };
}
