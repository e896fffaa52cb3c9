// Which agent definition the run works as: the one a prompt names with `/agent NAME` (the thread then
// keeps it), else the one the thread chose earlier, else the channel's default, else the deployment's.
// Only the name is decided here; the run reads the definition (shared/agents/load.ts).
import { requestedAgent } from '../../agents/request.ts';
import { next, type Gate } from '../context.ts';

export const chooseAgent: Gate = async ({ prompt, settings, channel, actor }) => {
  const requested = requestedAgent(prompt.text)?.name;
  const agent = requested ?? actor?.agent ?? settings.channels[channel]?.agent ?? settings.agent ?? undefined;
  return next({ ...(agent ? { agent } : {}), ...(requested ? { keepAgent: true } : {}) });
};
