// Tool calls that wait for a person (shared/approvals/): deployment-wide rules, and a channel's own
// rules, which are added to the deployment's (a channel cannot drop a rule the deployment sets).
import { settingsGroup } from '../group.ts';
import { approvalRulesSchema } from '../../approvals/rules.ts';

export const approvalSettings = settingsGroup({
  keys: { approvals: approvalRulesSchema.default([]) },
  channel: { approvals: approvalRulesSchema.optional() },
});
