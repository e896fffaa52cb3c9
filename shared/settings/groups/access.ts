// Who may use the agent, who may stop or steer its runs (shared/policy/access.ts). An unreadable
// block locks the agent rather than opening it: see shared/settings/load.ts.
import { accessSchema, OPEN_ACCESS } from '../../policy/access.ts';
import { settingsGroup } from '../group.ts';

export const accessSettings = settingsGroup({
  keys: { access: accessSchema.default({ ...OPEN_ACCESS }) },
});
