// `agents` in a thread: the agent definitions this channel can use, which one answers here, and any
// AGENT.md that could not be loaded (each also gets an AGENT.error.json beside it).
import { forChat } from '../support/display.ts';
import { defineCommand } from './command.ts';

export const agentsCommand = defineCommand({
  name: 'agents',
  parse: (text) => (/^agents$/i.test(text) ? {} : undefined),
  runsAt: 'dispatch',
  who: 'anyone',
  async answer({ channel, prompt }, deps) {
    if (!prompt) return { text: 'Ask `agents` in a thread with me.' };
    const settings = await deps.settings();
    if (!deps.agents) throw new Error('`agents` reads the agent definitions: it runs at dispatch');
    const { agents, problems } = await deps.agents.list(prompt.threadId);
    const fallback = settings.channels[channel]?.agent ?? settings.agent ?? undefined;
    const lines = agents.map(
      (agent) =>
        `• \`${agent.name}\`${agent.name === fallback ? ' (answers here by default)' : ''}: ${forChat(agent.description)}${agent.scope === 'channel' ? ' (this channel’s own)' : ''}`,
    );
    return {
      text: [
        agents.length
          ? '*Agents you can use here* (start a thread with `/agent NAME …`)'
          : 'No agents are defined here (agents/NAME/AGENT.md in the data bucket).',
        ...lines,
        ...problems.map((problem) => `• ${forChat(problem)}`),
      ].join('\n'),
    };
  },
});
