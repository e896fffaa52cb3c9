// How long one command may run: it runs within one sandbox-step invocation.

/** sandbox-step's Lambda timeout, Lambda's maximum. */
export const SANDBOX_STEP_TIMEOUT_SECONDS = 900;
/** The longest command: the same invocation syncs files before and after it (2 minutes kept for that). */
export const MAX_BASH_TIMEOUT_SECONDS = SANDBOX_STEP_TIMEOUT_SECONDS - 120;
export const DEFAULT_BASH_TIMEOUT_SECONDS = 120;
