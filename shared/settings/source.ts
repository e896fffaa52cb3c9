// The one way handlers get settings.json: a source injected into each handler (shared/handler-context/
// settings.ts) that re-reads the file at most once per max age. Most readers can wait that long for a
// change (queue limits, the secret patterns of posts); a run's prepare asks for the file as it is now,
// and the run then keeps what it read in its snapshot (shared/run/steps/snapshot.ts).
import type { StoreDeps } from '../context/store.ts';
import { loadSettings } from './load.ts';
import type { Settings } from './schema.ts';

export interface SettingsSource {
  /** settings.json as read at most `maxAgeMs` ago (default: the source's max age). */
  get(options?: { maxAgeMs?: number }): Promise<Settings>;
}

export interface SettingsSourceOptions {
  maxAgeMs: number;
  /** Where each read's problems go (`settings.json ignored`). */
  logger: { warn(message: string, extra?: Record<string, unknown>): void };
  /** Epoch milliseconds. */
  now?: () => number;
}

/** A source over the data bucket's settings.json. A failed read is not kept: the next get reads again. */
export function settingsSource(store: StoreDeps, { maxAgeMs, logger, now = Date.now }: SettingsSourceOptions): SettingsSource {
  let last: { settings: Settings; at: number } | undefined;
  let reading: Promise<Settings> | undefined;
  const read = async (): Promise<Settings> => {
    const startedAt = now();
    const { settings, problems } = await loadSettings(store);
    for (const problem of problems) logger.warn('settings.json ignored', { problem });
    last = { settings, at: startedAt };
    return settings;
  };
  return {
    async get(options = {}) {
      const maxAge = options.maxAgeMs ?? maxAgeMs;
      if (last && now() - last.at < maxAge) return last.settings;
      // Callers at the same moment share one read.
      reading ??= read().finally(() => (reading = undefined));
      return reading;
    },
  };
}
