// web_fetch's bounds, apart from its implementation: the tool's definition (in every step function's
// bundle) needs them, the HTML converter only the reach step.

/** What one page may be read up to unless the call asks for less, and at most. */
export const DEFAULT_PAGE_BYTES = 2 * 1024 * 1024;
export const MAX_PAGE_BYTES = 10 * 1024 * 1024;
export const PAGE_TIMEOUT_MS = 30_000;
