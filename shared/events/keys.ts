// Which keys under `events/` are event files, and where each one's error report goes. Apart from the
// schema so that the sandbox's sync, which only needs these, does not carry the schedule parser.

/** `events/…/name.json`, not an error report (`*.error.json`). */
export function isEventFileKey(key: string): boolean {
  return /^events\/(?:[^/]+\/)*[^/]+\.json$/.test(key) && !key.endsWith('.error.json');
}

/** Where the error report for an event file goes: `events/x.json` → `events/x.error.json`. */
export function errorFileKey(key: string): string {
  return `${key.replace(/\.json$/, '')}.error.json`;
}

/** The error report: which file, why nothing runs from this version of it, and when that was decided. */
export function errorFileBody(key: string, error: string, at: Date): string {
  return JSON.stringify(
    { file: key, error, at: at.toISOString(), help: 'Fix the file and save it again; nothing was scheduled from this version.' },
    null,
    2,
  );
}
