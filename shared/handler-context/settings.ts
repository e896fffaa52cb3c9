import { s3Client } from '../aws/s3.ts';
import type { JsonLogger } from '../observability/log.ts';
import { settingsSource, type CheckedSettingsSource } from '../settings/source.ts';

/** The handler's one settings source: settings.json in DATA_BUCKET, re-read at most every SETTINGS_CACHE_SECONDS. */
export function settingsFromEnv(env: { DATA_BUCKET: string; SETTINGS_CACHE_SECONDS: number }, logger: JsonLogger): CheckedSettingsSource {
  return settingsSource({ s3: s3Client(), bucket: env.DATA_BUCKET }, { maxAgeMs: env.SETTINGS_CACHE_SECONDS * 1000, logger });
}
