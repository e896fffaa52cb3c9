// The operator's hooks (shared/hooks/): deployment-wide ones, and a channel's own, which are added to
// the deployment's (a channel cannot drop a hook the deployment sets).
import { settingsGroup } from '../group.ts';
import { hooksSchema } from '../../hooks/settings.ts';

export const hookSettings = settingsGroup({
  keys: { hooks: hooksSchema.default([]) },
  channel: { hooks: hooksSchema.optional() },
});
