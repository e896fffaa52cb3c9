// settings.json: the runtime settings an operator edits in the data bucket, composed from one group
// of keys per file (shared/settings/groups/). Every key has a default, so `{}` is a valid file.
// Adding a setting: a key in its group's file, or a new group file and its line in SETTINGS_GROUPS.
import * as z from 'zod';
import type { Access } from '../policy/access.ts';
import type { SettingsGroup } from './group.ts';
import { accessSettings } from './groups/access.ts';
import { agentSettings } from './groups/agents.ts';
import { approvalSettings } from './groups/approvals.ts';
import { hookSettings } from './groups/hooks.ts';
import { compactionSettings } from './groups/compaction.ts';
import { eventSettings } from './groups/events.ts';
import { limitSettings } from './groups/limits.ts';
import { modelSettings } from './groups/model.ts';
import { promptCachingSettings } from './groups/prompt-caching.ts';
import { queueSettings } from './groups/queue.ts';
import { reachSettings } from './groups/reach.ts';
import { runBoundsSettings } from './groups/run-bounds.ts';
import { sandboxSettings } from './groups/sandbox.ts';
import { secretPatternSettings } from './groups/secret-patterns.ts';
import { skillsSettings } from './groups/skills.ts';
import { spendingSettings } from './groups/spending.ts';
import { uploadSettings } from './groups/uploads.ts';

/** In the order the keys are shown (the `settings` command). */
export const SETTINGS_GROUPS = [
  agentSettings,
  modelSettings,
  runBoundsSettings,
  queueSettings,
  compactionSettings,
  spendingSettings,
  promptCachingSettings,
  sandboxSettings,
  skillsSettings,
  eventSettings,
  uploadSettings,
  limitSettings,
  secretPatternSettings,
  reachSettings,
  accessSettings,
  approvalSettings,
  hookSettings,
] as const;

type Groups = typeof SETTINGS_GROUPS;
type Both<U> = (U extends unknown ? (u: U) => void : never) extends (both: infer I) => void ? I : never;
type Keys = Both<Groups[number]['keys']>;
type ChannelKeys = Both<NonNullable<Groups[number]['channel']>>;
type SettingsShape = Keys & { channels: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodObject<ChannelKeys>>> };

/** One shape of all the groups' keys; a key declared by two groups is a mistake, not an override. */
export function composeSettings(groups: readonly SettingsGroup[]): z.ZodObject<SettingsShape> {
  const keys: Record<string, z.core.$ZodType> = {};
  const channel: Record<string, z.core.$ZodType> = {};
  for (const group of groups) {
    for (const [into, shape] of [
      [keys, group.keys],
      [channel, group.channel ?? {}],
    ] as const) {
      for (const [key, schema] of Object.entries(shape)) {
        if (key in into) throw new Error(`settings.json key "${key}" is declared by two groups`);
        into[key] = schema;
      }
    }
  }
  /** Per-channel overrides, keyed `adapter:channel` (e.g. `slack:C0123`). */
  const channels = z.record(z.string(), z.object(channel)).default({});
  return z.object({ ...keys, channels }) as unknown as z.ZodObject<SettingsShape>;
}

export const settingsSchema = composeSettings(SETTINGS_GROUPS);

/** `access` may also be locked: see shared/settings/load.ts. */
export type Settings = Omit<z.infer<typeof settingsSchema>, 'access'> & { access: Access };
