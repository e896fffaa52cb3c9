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

/** How long a warm agent-step keeps the shared prompt files (PROMPT_FILES_CACHE_SECONDS): the bound for a file written straight to S3. */
export const DEFAULT_PROMPT_FILES_CACHE_SECONDS = 30;

/** How long a handler keeps settings.json before reading it again (a run's prepare always reads it fresh). */
export const DEFAULT_SETTINGS_CACHE_SECONDS = 60;
