// Reading settings.json from the data bucket. An invalid file is not fatal: the defaults stand in,
// and every problem is returned for the log, except that who may use the agent fails closed.
import { createHash } from 'node:crypto';
import { ROOT_KEYS } from '../ids.ts';
import { readText, type StoreDeps } from '../context/store.ts';
import { issueLines } from '../support/validation.ts';
import { accessSchema, LOCKED_ACCESS, OPEN_ACCESS, type Access } from '../policy/access.ts';
import { settingsSchema, type Settings } from './schema.ts';

export interface LoadedSettings {
  settings: Settings;
  /** Why settings.json was not used as written; the defaults (or the valid rest) apply instead. */
  problems: string[];
  /** Which version of the file this is (a digest of its text); absent when there is no file. */
  version?: string;
}

export async function loadSettings(deps: StoreDeps): Promise<LoadedSettings> {
  return parseSettingsText(await readText(deps, ROOT_KEYS.settings));
}

/** settings.json's text (undefined: no file) as the functions take it, with every problem in their words. */
export function parseSettingsText(raw: string | undefined): LoadedSettings {
  if (raw === undefined) return { settings: settingsSchema.parse({}), problems: [] };
  return { ...parseText(raw), version: createHash('sha256').update(raw).digest('hex').slice(0, 16) };
}

function parseText(raw: string): Omit<LoadedSettings, 'version'> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    return {
      settings: { ...settingsSchema.parse({}), access: LOCKED_ACCESS },
      problems: [`settings.json is not valid JSON: ${(error as Error).message}; until it is fixed, nobody may use the agent`],
    };
  }
  const parsed = settingsSchema.safeParse(json);
  if (parsed.success) return { settings: parsed.data, problems: [] };
  const problems = issueLines(parsed.error.issues).map((line) => `settings.json ${line}`);
  return { settings: { ...settingsSchema.parse({}), access: accessDespiteProblems(json, problems) }, problems };
}

/**
 * The defaults stand in for an invalid file, except for who may use the agent: an allow-list that
 * cannot be read must not let everyone in. A valid `access` block still applies; an invalid one
 * (or a file that is not an object) lets nobody in until the file is fixed.
 */
function accessDespiteProblems(json: unknown, problems: string[]): Access {
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    problems.push('settings.json: until it is fixed, nobody may use the agent');
    return LOCKED_ACCESS;
  }
  const block = (json as { access?: unknown }).access;
  if (block === undefined) return OPEN_ACCESS;
  const access = accessSchema.safeParse(block);
  if (access.success) return access.data;
  problems.push('settings.json access is invalid: until it is fixed, nobody may use the agent');
  return LOCKED_ACCESS;
}
