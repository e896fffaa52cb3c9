// `npm run chat -- --teams ...`: a terminal chat with the bot through the local Teams stand-in of a
// running local stack. A message starts a new channel thread (mentioning the bot), or continues one
// with --conversation <id>; --personal and --group start a personal or group chat instead. The reply
// is printed once it has stopped changing. The stand-in is the local stack's (chat-cli.ts finds it).
import type { StoredActivity } from './state.ts';

export interface TeamsChatOptions {
  conversation?: string;
  personal: boolean;
  group: boolean;
  timeout: string;
  quiet: string;
}

export async function teamsChat(base: string, values: TeamsChatOptions, positionals: string[]): Promise<number> {
  async function call<T>(path: string, init?: RequestInit): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, init);
    } catch {
      throw new Error(`Cannot reach the local Teams stand-in at ${base}. Is the local stack still running (npm start)?`);
    }
    if (!response.ok) throw new Error(`${path} answered HTTP ${response.status}: ${await response.text()}`);
    return (await response.json()) as T;
  }
  const text = positionals.join(' ');
  if (!text) {
    console.log('Usage: npm run chat -- --teams [--conversation <id> | --personal | --group] [--timeout <s>] "message"');
    return 2;
  }
  const kind = values.personal ? 'personal' : values.group ? 'groupChat' : 'channel';
  const sent = await call<{ conversationId: string; activityId: string; status: number }>('/_local/post', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind, conversationId: values.conversation, text, mention: values.conversation ? false : undefined }),
  });
  if (sent.status >= 300) throw new Error(`The bot's messaging endpoint answered HTTP ${sent.status}`);
  const deadline = Date.now() + Number(values.timeout) * 1000;
  let last = '';
  let stableSince = Date.now();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 300));
    const { conversations } = await call<{ conversations: Record<string, StoredActivity[]> }>(
      `/_local/conversations?id=${encodeURIComponent(sent.conversationId)}`,
    );
    const replies = (conversations[sent.conversationId] ?? []).filter(
      (a) =>
        a.type === 'message' &&
        a.from.id !== undefined &&
        Number(a.id) > Number(sent.activityId) &&
        !a.deleted &&
        a.text &&
        a.text !== '...',
    );
    const now = replies.map((a) => a.text).join('\n\n');
    if (now !== last) [last, stableSince] = [now, Date.now()];
    else if (now && Date.now() - stableSince >= Number(values.quiet)) break;
  }
  console.log(last || `(no reply within ${values.timeout} s)`);
  console.log(`\nContinue:  npm run chat -- --teams --conversation '${sent.conversationId}' "your message"`);
  return last ? 0 : 2;
}
