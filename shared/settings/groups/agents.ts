// Which agent definition answers (shared/agents/): the deployment's default and a channel's own.
// A thread started with `/agent NAME` keeps that one instead.
import { settingsGroup } from '../group.ts';
import { agentNameSchema } from '../../agents/name.ts';

export const agentSettings = settingsGroup({
  /** null: no agent definition, the deployment's IDENTITY.md and every tool. */
  keys: { agent: agentNameSchema.nullable().default(null) },
  channel: { agent: agentNameSchema.optional() },
});
