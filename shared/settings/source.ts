// The one way handlers get settings.json: a source injected into each handler (shared/handler-context/
// settings.ts) that re-reads the file at most once per max age. Most readers can wait that long for a
// change (queue limits, the secret patterns of posts); a run's prepare asks for the file as it is now,
// and the run then keeps what it read in its snapshot (shared/run/steps/snapshot.ts).
import type { StoreDeps } from '../context/store.ts';
import { loadSettings, type LoadedSettings } from './load.ts';
import type { Settings } from './schema.ts';

export interface SettingsSource {
  /** settings.json as read at most `maxAgeMs` ago (default: the source's max age). */
  get(options?: { maxAgeMs?: number }): Promise<Settings>;
}

/** A source that also says what was wrong with the file it read (admission tells admins). */
export interface CheckedSettingsSource extends SettingsSource {
  /** Why settings.json (as `get` reads it) is not used as written, and which version of it that is. */
  problems(): Promise<Pick<LoadedSettings, 'problems' | 'version'>>;
}

export interface SettingsSourceOptions {
  maxAgeMs: number;
  /** Where each read's problems go (`settings.json ignored`). */
  logger: { warn(message: string, extra?: Record<string, unknown>): void };
  /** Epoch milliseconds. */
  now?: () => number;
}

/** A source over the data bucket's settings.json. A failed read is not kept: the next get reads again. */
export function settingsSource(store: StoreDeps, { maxAgeMs, logger, now = Date.now }: SettingsSourceOptions): CheckedSettingsSource {
  let last: { settings: Settings; problems: string[]; version?: string; at: number } | undefined;
  let reading: Promise<Settings> | undefined;
  const read = async (): Promise<Settings> => {
    const startedAt = now();
    const { settings, problems, version } = await loadSettings(store);
    for (const problem of problems) logger.warn('settings.json ignored', { problem });
    last = { settings, problems, ...(version ? { version } : {}), at: startedAt };
    return settings;
  };
  const get: SettingsSource['get'] = async (options = {}) => {
    const maxAge = options.maxAgeMs ?? maxAgeMs;
    if (last && now() - last.at < maxAge) return last.settings;
    // Callers at the same moment share one read.
    reading ??= read().finally(() => (reading = undefined));
    return reading;
  };
  return {
    get,
    async problems() {
      if (!last) await get();
      return { problems: last?.problems ?? [], ...(last?.version ? { version: last.version } : {}) };
    },
  };
}
