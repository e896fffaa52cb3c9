// `disconnect <server>`: forgets the sender's own OAuth connection to an MCP server (its tokens), so
// their runs no longer call it as them; the next run that needs it sends them a Connect link again.
// Answered to the sender alone, in the thread's order; it touches nothing but their own tokens item.
import { deleteConnection } from '../reach/oauth/records.ts';
import { defineCommand } from './command.ts';

export const disconnectCommand = defineCommand({
  name: 'disconnect',
  parse: (text) => {
    const server = /^\/?disconnect\s+([A-Za-z0-9-]{1,32})[.!]?$/i.exec(text)?.[1];
    return server ? { server } : undefined;
  },
  runsAt: 'dispatch',
  who: 'anyone',
  async answer({ args, who }, deps) {
    const { server } = args;
    if (!who) return { text: 'Only a person can disconnect their own account.' };
    const had = await deleteConnection(deps.control.actor, `${who.adapter}:${who.userId}`, server);
    deps.logger.info('mcp server disconnected', { server, had });
    return {
      text: had
        ? `Disconnected: your runs no longer call ${server} as you. Ask for something that needs it to connect again.`
        : `You had no connection to ${server}.`,
    };
  },
});
