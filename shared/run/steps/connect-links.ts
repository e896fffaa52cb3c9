// A person's run needed an MCP server that they have not connected (`"auth": "oauth"`): the server's
// tools are left out of the run, and that person alone is sent a Connect link, ephemerally (or in a
// direct message where the platform has no ephemeral messages), never in the thread, where anyone
// could follow it and connect their own account in that person's name. Once per server per run.
import type { Thread } from 'chat';
import type { RunInput } from '../../contracts.ts';
import { personOf } from '../../admission/person.ts';
import type { McpListing } from '../../reach/mcp-tools.ts';
import { createState, STATE_LIFETIME_MS } from '../../reach/oauth/records.ts';
import { postOnce } from '../ledger.ts';
import { RUN_RECORD } from '../../table.ts';
import type { AgentDeps } from './deps.ts';

export const connectText = (server: string, link: string) =>
  `The ${server} MCP server works with your own account, which you have not connected, so its tools are not in this run. ` +
  `Connect it here (the link is yours alone and works once, for ${STATE_LIFETIME_MS / 60_000} minutes): ${link}\n` +
  `Then ask again in the thread. \`disconnect ${server}\` forgets your connection.`;

export async function sendConnectLinks(
  deps: AgentDeps,
  run: RunInput,
  thread: Thread,
  toConnect: NonNullable<McpListing['toConnect']>,
): Promise<void> {
  const person = personOf(run.prompt);
  if (!person) return;
  for (const server of toConnect) {
    await postOnce(deps.ledger, run.runId, RUN_RECORD.mcpConnectLink(server.server), async () => {
      if (!deps.oauthStartUrl) {
        await thread.postEphemeral(
          person.userId,
          `The ${server.server} MCP server needs your own account, but this deployment has no OAuth route (OAUTH_START_URL).`,
          { fallbackToDM: true },
        );
        return { sent: deps.now() };
      }
      const state = await createState(
        deps.ledger,
        {
          person: `${person.adapter}:${person.userId}`,
          threadId: run.threadId,
          server: server.server,
          serverUrl: server.serverUrl,
          ...(server.oauthClient ? { oauthClient: server.oauthClient } : {}),
        },
        deps.now(),
      );
      await thread.postEphemeral(person.userId, connectText(server.server, `${deps.oauthStartUrl}?state=${state}`), { fallbackToDM: true });
      // The ledger keeps when, never the link.
      return { sent: deps.now() };
    });
  }
}
