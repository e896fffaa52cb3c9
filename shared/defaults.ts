// Defaults that the stack, the handlers and the settings schema all state: one place each.

/** The Bedrock inference profile the agent calls unless settings.json or BEDROCK_MODEL_ID say otherwise. */
export const DEFAULT_MODEL_ID = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';

/** When a context is compacted (token estimates; see shared/context/compaction.ts). */
export const DEFAULT_COMPACTION_SETTINGS: Readonly<
  Record<'contextWindowTokens' | 'reservedOutputTokens' | 'keepRecentTokens' | 'thresholdRatio', number>
> = Object.freeze({
  contextWindowTokens: 200_000,
  reservedOutputTokens: 16_384,
  keepRecentTokens: 20_000,
  thresholdRatio: 0.8,
});

/** Periodic events may not fire more often than this many minutes apart (`minEventIntervalMinutes`). */
export const DEFAULT_MIN_EVENT_INTERVAL_MINUTES = 5;

/** A skill's instructions longer than this are cut in the system prompt (`maxSkillBodyChars`). */
export const DEFAULT_MAX_SKILL_BODY_CHARS = 20_000;

/** What of a sandbox's /workspace/data is kept in S3 (`sandbox.maxSyncedFiles`, `sandbox.maxSyncedMegabytes`). */
export const DEFAULT_SANDBOX_SYNC_LIMITS = Object.freeze({ maxSyncedFiles: 5_000, maxSyncedMegabytes: 1_024 });

/**
 * How far runs may start runs through event files, how many event files a channel may keep, how many
 * one run may save, how many periodic ones the agent may keep in a channel, and for how many days
 * without a person's reply the agent's periodic ones keep firing.
 */
export const DEFAULT_EVENT_LIMITS = Object.freeze({
  maxEventChainDepth: 3,
  maxEventFilesPerChannel: 50,
  maxEventFilesPerRun: 5,
  maxAgentPeriodicEventsPerChannel: 5,
  agentPeriodicEventDays: 7,
});

/**
 * Work across threads (`limits`): runs holding a thread's lease at once, per channel and per
 * deployment, and sandbox tasks at once. Reasons in the README's settings section.
 */
export const DEFAULT_CAPACITY_LIMITS = Object.freeze({ maxConcurrentRunsPerChannel: 10, maxConcurrentRuns: 30, maxRunningSandboxes: 40 });
