// `/agent NAME` at the start of a message: on its own, so admission reads it without the AGENT.md parser.

/** `/agent NAME` opening a message (after any mention of the bot): the agent the thread is to work with from now on. */
export function requestedAgent(text: string): { name: string; rest: string } | undefined {
  const match = /^(?:(?:<@[A-Z0-9]+>|@\S+)\s*)?\/agent\s+([a-z0-9]+(?:-[a-z0-9]+)*)(?=\s|$)\s*([\s\S]*)$/i.exec(text.trim());
  return match ? { name: match[1]!.toLowerCase(), rest: match[2]!.trim() } : undefined;
}

/** A message's text without its `/agent NAME` opening, which chose the agent and is not for the model. */
export function withoutAgentRequest(text: string): string {
  const request = requestedAgent(text);
  return request?.rest || text;
}
