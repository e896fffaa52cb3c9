// The state table's layout: its key schema, and every kind of item in it with the key it lives
// under. Each kind says who writes it, who reads it and how long it lives (TTL, or none). Every
// key the code uses is built here; test/unit/table.test.ts pins each to the literal key already
// stored in deployments, so a change here that would lose existing items fails it.

/** The key schema, shared by the CDK construct, the local cloud and the code. */
export const TABLE_KEYS = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds. DynamoDB TTL deletes lazily, so readers also filter expired items themselves. */
  ttlAttribute: 'expiresAt',
} as const;

export type TableKey = { pk: string; sk: string };

// ---------------------------------------------------------------------------------------------
// Threads and their runs (shared/run/actor.ts)

/**
 * A thread's actor: its lease (the running run), the prompts queued behind it, stop and steer flags.
 * Written by dispatch (admit, stale lease), the webhook (stop, steer), agent-step and run-ended
 * (release, hand-over, steering taken) and the ops CLI (resume). Read by the same and by each agent
 * step (its stop and steer flags). No TTL: it lives as long as the thread.
 */
export const actorKey = (threadId: string): TableKey => ({ pk: `actor#${threadId}`, sk: 'actor' });

/**
 * A prompt admitted once (by message id), written in the same transaction as its actor update, so
 * a redelivered prompt is a duplicate. Written by dispatch; read only by that condition. TTL 7 days.
 */
export const admittedPromptKey = (threadId: string, messageId: string): TableKey => ({ pk: `admitted#${threadId}`, sk: messageId });

/**
 * A thread whose prompts wait with nothing running (held while the deployment was paused), so
 * resume finds them with one query. Written by dispatch (a held prompt) and by a release while
 * paused; deleted when the thread starts again. Read by resume (the ops CLI, an admin's `ops resume`
 * in dispatch). No TTL.
 */
export const WAITING_THREADS = 'actors#waiting';
export const waitingThreadKey = (threadId: string): TableKey => ({ pk: WAITING_THREADS, sk: threadId });

/**
 * The thread a person last prompted in, per channel (`adapter:channel`), for slash commands, which
 * carry no thread. Written by the webhook on each prompt; read by the webhook's slash commands. TTL 7 days.
 */
export const recentThreadKey = (channelKey: string, userId: string): TableKey => ({ pk: `recent#${channelKey}`, sk: userId });

// ---------------------------------------------------------------------------------------------
// The run ledger (shared/run/ledger.ts): what a retried step already did, one item per record
// under its run. Written and read through the ledger by agent-step and run-ended (and the
// scheduler, under the pseudo-run `events`). TTL 30 days.

export const ledgerKey = (runId: string, record: string): TableKey => ({ pk: `run#${runId}`, sk: record });

/** The records of a run, by name. */
export const RUN_RECORD = {
  /** The message a model step posted (streamed), edited by a retry of the step and named in the exchange log. */
  reply: (step: number) => `reply#${step}`,
  /** The notice that a budget refused the step's model call. */
  budgetRefused: (step: number) => `budget-refused#${step}`,
  /** The Stop button card, removed when the run ends. */
  stopCard: 'stop-card',
  /** The message asking for a decision on a tool call (shared/approvals/). */
  approvalMessage: (toolUseId: string) => `approval-message#${toolUseId}`,
  /** The notice that a UserPromptSubmit or SessionStart hook withheld the prompt (shared/hooks/). */
  hookBlocked: 'hook-blocked',
  /** The run's tokens and cost under its replies (`showCost`). */
  costFooter: 'cost-footer',
  /** The notice that some of the run's MCP servers could not be listed. */
  mcpUnavailable: 'mcp-unavailable',
  /** The private Connect link sent to the run's person for an OAuth MCP server they have not connected. */
  mcpConnectLink: (server: string) => `mcp-connect#${server}`,
  /** The message naming why the run failed. */
  errorReply: 'error-reply',
  /** run-ended's notice that an operator or an admin stopped the run. */
  operatorStopNotice: 'operator-stop-notice',
  /** The run's outcome and end time as its audit record has them: the first end path's stand. */
  auditEnd: 'audit-end',
  /** The run's end was counted in the metrics. */
  runEndCounted: 'run-end-counted',
  /** A subagent's answer and how it ended, for the parent's tool result (shared/run/subagents/). */
  childResult: 'child-result',
} as const;

/**
 * A run's wait for the subagents one model answer started: the children, how many are still working,
 * the task token the run waits with, each child's progress for the status line. Written by agent-step
 * (the parent's tool step creates it, AwaitSubagents stores the token, each child's end counts itself
 * done and its steps their progress) and run-ended (a child that ended outside its finish step); read
 * by the same. TTL 30 days, as the ledger.
 */
export const subagentBatchKey = (runId: string, batch: string): TableKey => ledgerKey(runId, `subagents#${batch}`);

/** The ledger of event firings and event files, which belong to no run. Written and read by the scheduler. */
export const EVENTS_LEDGER = 'events';

/** The records of the events ledger, by name. */
export const EVENT_RECORD = {
  /** The post that opened a channel firing's thread (its thread and message), by the firing's id made safe, so a retried firing posts once. */
  channelPost: (safeFiringId: string) => `channel-post#${safeFiringId}`,
  /** The notice to the thread that wrote a version (ETag) of an agent's periodic event file. */
  periodicNotice: (fileKey: string, etag: string) => `periodic-notice#${fileKey}#${etag}`,
};

/**
 * How many event files a run has saved from its sandbox (maxEventFilesPerRun): a counter under the
 * run's partition. Taken by sandbox-step (a sync) and agent-step. TTL 2 days.
 */
export const eventFilesSavedKey = (runId: string): TableKey => ledgerKey(runId, 'event-files-saved');

// ---------------------------------------------------------------------------------------------
// Approvals (shared/approvals/record.ts)

/**
 * A tool call waiting for a person's decision, and then the decision: run, call, input digest,
 * approvers, thread and message, state, the task token its run waits with, decided by, deadline. One
 * partition, so `ops approvals` finds the waiting ones with one query. Written by agent-step (created,
 * its message and token, a timeout or a message that could not be posted), the webhooks and the ops
 * CLI (a decision, on condition that none was taken); read by the same. TTL 30 days after its deadline.
 */
export const APPROVALS = 'approvals';
export const approvalKey = (runId: string, toolUseId: string): TableKey => ({ pk: APPROVALS, sk: `${runId}#${toolUseId}` });
/** The approval a person denied from the thread and may still give a reason for (`reason …`), by thread and `adapter:id`. TTL: the window and an hour. */
export const pendingReasonKey = (threadId: string, by: string): TableKey => ({ pk: `reason#${threadId}`, sk: by });

// ---------------------------------------------------------------------------------------------
// Capacity (shared/run/capacity.ts): counters changed in the same transaction as what they count.
// Written by dispatch (a lease taken), agent-step and run-ended (a lease given back), agent-step and
// the reaper (a sandbox item created or deleted). Read by the same conditions, the scheduler's
// firing gate and operators. No TTL.

const LIMITS = 'limits';
/** Runs holding a lease in the deployment. */
export const deploymentRunsKey: TableKey = { pk: LIMITS, sk: 'runs' };
/** Runs holding a lease in one channel (`adapter:channel`). */
export const channelRunsKeyOf = (channelKey: string): TableKey => ({ pk: LIMITS, sk: `runs#${channelKey}` });
/** Sandbox items that hold a slot. */
export const sandboxesKey: TableKey = { pk: LIMITS, sk: 'sandboxes' };

/**
 * A thread whose lease holds run slots, and since when, so a slot whose release was lost is found
 * without the thread's next prompt. Written with the slots (as above); read by dispatch (stale slots),
 * the kill switch and `ops runs`. No TTL.
 */
export const SLOT_HOLDERS = 'limits#holders';
export const slotHolderKey = (threadId: string): TableKey => ({ pk: SLOT_HOLDERS, sk: threadId });

// ---------------------------------------------------------------------------------------------
// Sandboxes (shared/sandbox/lifecycle.ts)

/**
 * A thread's sandbox task: its ARN, address, token and status. Written by agent-step (start, ready),
 * sandbox-step (used, lost) and the reaper (stopping, deleted); read by the same, the reaper with one
 * query of the partition. No TTL: the reaper deletes it with its task.
 */
export const SANDBOXES = 'sandboxes';
export const sandboxKey = (threadId: string): TableKey => ({ pk: SANDBOXES, sk: threadId });

/**
 * A channel's workspace version (shared/sandbox/workspace-version.ts): a counter bumped after every
 * write by the runtime to the S3 files its threads' sandboxes share (the channel's MEMORY.md,
 * HEARTBEAT.md, skills/ and event files) or to a thread's attachments/, so sandbox-step lists S3
 * only when it moved. Keyed by the channel's data directory. Written by sandbox-step (a sync that
 * saved a shared file), agent-step (attachments) and the scheduler (event error files, uploads);
 * read by sandbox-step, and by agent-step's prepare, which reads the channel's MEMORY.md and skills
 * again only when it moved (shared/context/prompt-files.ts). No TTL: it lives as long as the channel.
 */
export const workspaceVersionKey = (channelDir: string): TableKey => ({ pk: `workspace#${channelDir}`, sk: 'version' });

// ---------------------------------------------------------------------------------------------
// Spending (shared/policy/budgets.ts)

export type SpendPeriod = 'day' | 'month';

const pad = (n: number) => String(n).padStart(2, '0');
/** `2026-11-24` (a day) or `2026-11` (a month), in UTC. */
const periodIdOf = (period: SpendPeriod, at: Date) =>
  period === 'day'
    ? `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())}`
    : `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}`;

/**
 * One period's spending (dollars reserved and spent, tokens, steps) by one subject (`scope#who`), of
 * one kind of run or `all`. Written by agent-step (each model step reserves, then settles); read by
 * dispatch (a spent budget refuses a prompt), the scheduler's firing gate and `usage` (the webhook,
 * dispatch). TTL 40 days
 * (a day's) or 400 days (a month's).
 */
export const spendKey = (period: SpendPeriod, at: Date, scope: string, who: string, trigger = 'all'): TableKey => ({
  pk: `spend#${periodIdOf(period, at)}`,
  sk: `${scope}#${who}#${trigger}`,
});

/** A thread's spending over its whole life. Written by agent-step; read by `usage` (the webhook, dispatch). TTL 180 days. */
export const threadSpendKey = (threadId: string): TableKey => ({ pk: 'spend#thread', sk: threadId });

/** Which spending counter a key is: a day's, a month's or a thread's. */
export function spendPeriodOf(key: TableKey): SpendPeriod | 'thread' {
  if (key.pk === threadSpendKey('').pk) return 'thread';
  return key.pk.length > 'spend#YYYY-MM'.length ? 'day' : 'month';
}

// ---------------------------------------------------------------------------------------------
// The deployment (shared/policy/pause.ts)

/**
 * The pause flag (who paused, when): present while the deployment is paused. Written by the ops CLI
 * and an admin's `ops pause`/`ops resume` (dispatch); read by dispatch, every release of a lease
 * (agent-step, run-ended, the webhook's stop) and the scheduler's firing gate. No TTL.
 */
export const pauseKey: TableKey = { pk: 'ops', sk: 'pause' };

// ---------------------------------------------------------------------------------------------
// Event files (shared/events/expiry.ts)

/**
 * When an agent's periodic event file stops firing (`runsUntil`, epoch ms). Written by the scheduler
 * (a version saved) and dispatch (a person's message renews it); read by the scheduler at each
 * firing. TTL 30 days after it stops.
 */
export const eventExpiryKey = (fileKey: string): TableKey => ({ pk: 'event-expiry', sk: fileKey });

/**
 * A thread an agent's periodic file belongs to, so a person writing there renews it. Written by the
 * scheduler (the thread that wrote it, each thread it ran in) and dispatch; read by dispatch with one
 * query of the thread's partition. TTL 30 days after the file stops.
 */
export const eventThreadsPartition = (threadId: string) => `event-threads#${threadId}`;
export const eventThreadKey = (threadId: string, fileKey: string): TableKey => ({ pk: eventThreadsPartition(threadId), sk: fileKey });

/**
 * The set of an events folder's agent periodic files in force (maxAgentPeriodicEventsPerChannel),
 * taken on condition that it has room. Written and read by the scheduler. No TTL.
 */
export const periodicInForceKey = (folder: string): TableKey => ({ pk: 'event-periodic', sk: folder });

// ---------------------------------------------------------------------------------------------
// Triggers and uploads (shared/triggers/)

/** The partition of a declared trigger's firings and rate windows. */
export const triggerPartition = (triggerName: string) => `trigger#${triggerName}`;
/** The partition of an uploads folder's firings. */
export const uploadPartition = (adapterId: string, channelId: string) => `upload#${adapterId}:${channelId}`;

/**
 * The claim of one firing (a trigger's by dedupe key, an upload's by key and ETag, hashed), so a
 * redelivered event runs once. Written and read by the scheduler. TTL 30 days.
 */
export const firingClaimKey = (partition: string, claimKey: string): TableKey => ({ pk: partition, sk: `firing#${claimKey}` });

/**
 * A trigger's firings in one rate-limit window (from its ISO start), with the last one's text for
 * the summary. Written and read by the scheduler. TTL 30 days.
 */
export const triggerWindowKey = (triggerName: string, windowStart: string): TableKey => ({
  pk: triggerPartition(triggerName),
  sk: `window#${windowStart}`,
});

// ---------------------------------------------------------------------------------------------
// Chat platforms

/**
 * Where a Teams conversation lives (its serviceUrl and type), per channel, so an event can start a
 * thread there long after anyone wrote. Written by the Teams webhook on each verified activity; read
 * by the scheduler and by the agent's chat (replies, uploads). No TTL.
 */
export const teamsConversationKey = (channelId: string): TableKey => ({ pk: `conversation#teams:${channelId}`, sk: 'reference' });

/** The Chat SDK state adapter's kinds of item (shared/platforms/chat-state.ts). */
export type ChatStateKind = 'kv' | 'lock' | 'sub' | 'list' | 'queue';

/**
 * The Chat SDK's state (shared/platforms/chat-state.ts): values, per-thread locks, subscriptions,
 * message lists and queues, each under `chat#[<keyPrefix>#]<kind>#<name>`. Written and read by every
 * function holding a Chat SDK instance (the webhooks, dispatch, agent-step, run-ended, the scheduler).
 * TTL as the SDK asks per item (none for subscriptions).
 */
export const chatStateKey = (kind: ChatStateKind, name: string, keyPrefix?: string): TableKey => ({
  pk: `${keyPrefix ? `chat#${keyPrefix}#` : 'chat#'}${kind}#${name}`,
  sk: kind,
});

/**
 * The names of our own values in the Chat SDK state (its `kv` items; the SDK names its own, such as
 * `dedupe:<adapter>:<message id>`, and the Teams adapter `teams:channelContext:<conversation>`).
 */
export const CHAT_VALUE = {
  /** A slash command or a button press already acted on (the webhook; TTL 10 minutes, the replay window). */
  replayed: (adapter: string, kind: 'slash' | 'action', id: string) => `dedupe:${adapter}:${kind}:${id}`,
  /** A refused person was told so in this thread (dispatch; TTL 90 days). */
  accessRefusalTold: (threadId: string, userId: string | undefined) => `access-refused:${threadId}:${userId}`,
  /** A scheduled prompt's thread was told this budget is spent (dispatch; TTL 32 days). */
  budgetRefusalTold: (threadId: string, budget: TableKey) => `budget-told:${threadId}:${budget.pk}:${budget.sk}`,
  /** An admin was told of this version of an invalid settings.json (dispatch; TTL 90 days). */
  settingsProblemsTold: (version: string, admin: string) => `settings-problems-told:${version}:${admin}`,
  /** Where Graph finds a Teams conversation, as the Teams adapter caches it (it writes it; our connector reads it). */
  teamsChannelContext: (conversationId: string) => `teams:channelContext:${conversationId}`,
};

// ---------------------------------------------------------------------------------------------
// MCP servers that need OAuth (shared/reach/oauth/)

/**
 * A Connect link's `state`, bound to the person, thread and server it was made for: written by
 * agent-step (a person's run needed a server they have not connected), started once by the OAuth
 * function (its PKCE verifier and client kept here, never in the browser) and deleted on condition by
 * its callback, so it is used once. TTL 10 minutes (readers check the time themselves too).
 */
export const oauthStateKey = (state: string): TableKey => ({ pk: `oauth-state#${state}`, sk: 'state' });

/**
 * A person's (`adapter:userId`) tokens for one MCP server, encrypted with the stack's tokens key under
 * an encryption context naming both, with the OAuth client they were issued to. Written by the OAuth
 * function's callback and by the reach step (a refresh); read by the reach step; deleted by
 * `disconnect <server>` (the webhook, dispatch). No TTL: the person disconnects.
 */
export const oauthTokensKey = (person: string, server: string): TableKey => ({ pk: `oauth-tokens#${person}`, sk: server });
