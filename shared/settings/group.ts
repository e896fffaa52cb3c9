// One group of settings.json keys: its top-level keys, each a zod schema with its default (so a file
// that leaves a key out gets it), and the keys a channel may override under `channels["adapter:channel"]`
// (absent there: the top-level value applies). The groups are listed in shared/settings/schema.ts.
import type * as z from 'zod';

export interface SettingsGroup<Keys extends z.ZodRawShape = z.ZodRawShape, Channel extends z.ZodRawShape = z.ZodRawShape> {
  readonly keys: Keys;
  readonly channel?: Channel;
}

/** A group, with its schemas' types kept for the composed `Settings` type. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a group without channel keys adds none
export const settingsGroup = <Keys extends z.ZodRawShape, Channel extends z.ZodRawShape = {}>(group: SettingsGroup<Keys, Channel>) => group;
