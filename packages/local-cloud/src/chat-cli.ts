// Terminal chat with the bot through the local Slack stand-in of a running local stack (with
// --teams, through the local Teams stand-in: packages/local-cloud/src/teams/chat.ts).
//
//   npm run chat -- "hello"                    mention the bot in #local (C0LOCAL), print the reply
//   npm run chat -- --thread <ts> "and then?"  reply in an existing thread
//   npm run chat                               interactive: one thread, one line per message
//
// Options: --channel <id>, --user <id>, --no-mention, --timeout <seconds> (default 120),
// --quiet <ms> (how long the reply must stay unchanged to count as complete, default 3000).
// The stand-in is the one of the stack that npm start wrote to .local/stack.json (stack-file.ts);
// LOCAL_SLACK_URL (LOCAL_TEAMS_URL) names one explicitly. No default port is ever guessed.
import { createInterface } from 'node:readline';
import { teamsChat } from './teams/chat.ts';
import { LocalStackError, openLocalStack } from './stack-file.ts';
import { loadDotEnv, parseCommandLine } from '../../../shared/support/cli-args.ts';

const DEFAULT_CHANNEL = 'C0LOCAL';
const USAGE = `usage: npm run chat -- [options] ["message"]
Talks to the bot through the Slack stand-in of the running local stack (npm start); without a
message, interactively (one thread, a line per message).
  -t, --thread TS        reply in this thread (its ts, printed after each reply)
  -c, --channel ID       the channel (default ${DEFAULT_CHANNEL})
  -u, --user ID          post as this user
      --no-mention       do not mention the bot
      --timeout S        how long to wait for a complete reply (default 120)
      --quiet MS         how long a reply must stay unchanged to count as complete (default 3000)
      --teams            through the Teams stand-in instead, with:
      --conversation ID  continue this conversation; --personal, --group: start one of that kind
  -h, --help             this text
The stack is found in .local/stack.json (LOCAL_STACK_FILE names another stack's file); LOCAL_SLACK_URL
or LOCAL_TEAMS_URL name a stand-in directly. These variables may also be set in .env.`;

interface Info {
  botUserId: string;
  botName: string;
  eventsUrl: string | null;
}

interface LocalMessage {
  ts: string;
  user: string;
  bot_id?: string;
  text: string;
  local: { stream?: { state: 'streaming' | 'stopped' } };
}

interface Posted {
  ts: string;
  threadTs: string;
  status: number | null;
  deliveries: { url: string; status: number | null; error?: string }[];
}

class CliError extends Error {}

let BASE = '';

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${BASE}${path}`, init);
  } catch {
    throw new CliError(`Cannot reach the local Slack stand-in at ${BASE}. Is the local stack still running (npm start)?`);
  }
  if (!response.ok) throw new CliError(`${path} answered HTTP ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function post(channel: string, text: string, threadTs: string | undefined, user: string | undefined): Promise<Posted> {
  const posted = await call<Posted>('/_local/post', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ channel, text, threadTs, user }),
  });
  if (posted.status === null || posted.status >= 300) {
    const failed = posted.deliveries.find((d) => d.status === null || d.status >= 300);
    throw new CliError(
      `Your message was stored (ts ${posted.ts}) but the event was not delivered to the bot` +
        (failed?.url ? ` at ${failed.url}` : '') +
        `: ${failed?.error ?? `HTTP ${String(posted.status)}`}. Is the local stack running?`,
    );
  }
  return posted;
}

/** Print the bot's replies after `afterTs` as they stream; resolve true when complete, false on timeout. */
async function follow(
  channel: string,
  threadTs: string,
  afterTs: string,
  info: Info,
  timeoutMs: number,
  quietMs: number,
): Promise<boolean> {
  const printed = new Map<string, string>();
  const deadline = Date.now() + timeoutMs;
  let current: string | undefined;
  let lastChange = Date.now();
  let lastStatus: string | null = null;
  const out = process.stdout;

  while (Date.now() < deadline) {
    const data = await call<{ messages: LocalMessage[]; ephemeral?: (LocalMessage & { visibleTo: string })[]; status: string | null }>(
      `/_local/messages?channel=${encodeURIComponent(channel)}&thread_ts=${encodeURIComponent(threadTs)}`,
    );
    // Replies only the sender sees (a refusal, a usage report) are shown to them as such.
    const sender = data.messages.find((m) => m.ts === afterTs)?.user;
    const onlyYou = (data.ephemeral ?? []).filter((m) => m.visibleTo === sender).map((m) => ({ ...m, text: `(only you) ${m.text}` }));
    const replies = [...data.messages.filter((m) => m.bot_id || m.user === info.botUserId), ...onlyYou]
      .filter((m) => Number(m.ts) > Number(afterTs))
      .sort((a, b) => Number(a.ts) - Number(b.ts));
    for (const m of replies) {
      // Show <@U123> as @name; hide the post+edit fallback's "..." placeholder.
      const shown = m.text.replace(
        /<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g,
        (_, id: string, name?: string) => `@${name ?? (id === info.botUserId ? info.botName : id)}`,
      );
      const text = shown.trim() === '...' ? '' : shown;
      const before = printed.get(m.ts);
      if (before === undefined && !text) continue;
      if (before === text) continue;
      lastChange = Date.now();
      if (before === undefined) {
        out.write(`${current ? '\n' : ''}${info.botName}> ${text}`);
        current = m.ts;
      } else if (current === m.ts && text.startsWith(before)) {
        out.write(text.slice(before.length));
      } else {
        out.write(`\n${info.botName}> (edited) ${text}`);
        current = m.ts;
      }
      printed.set(m.ts, text);
    }
    if (data.status !== lastStatus) {
      lastStatus = data.status;
      if (data.status) process.stderr.write(`${printed.size ? '\n' : ''}[${info.botName} ${data.status}]\n`);
      lastChange = Date.now();
    }
    const streaming = replies.some((m) => m.local.stream?.state === 'streaming');
    const last = replies.at(-1);
    const quiet = last?.local.stream?.state === 'stopped' ? Math.min(quietMs, 1000) : quietMs;
    if (printed.size > 0 && !streaming && !data.status && Date.now() - lastChange >= quiet) {
      out.write('\n');
      return true;
    }
    await sleep(200);
  }
  out.write('\n');
  return false;
}

function continueHint(channel: string, threadTs: string): string {
  const channelArg = channel === DEFAULT_CHANNEL ? '' : ` --channel ${channel}`;
  return `Continue this thread:  npm run chat -- --thread ${threadTs}${channelArg} "your message"`;
}

loadDotEnv();
const { values, positionals } = parseCommandLine('chat', USAGE, {
  allowPositionals: true,
  options: {
    thread: { type: 'string', short: 't' },
    channel: { type: 'string', short: 'c', default: DEFAULT_CHANNEL },
    user: { type: 'string', short: 'u' },
    'no-mention': { type: 'boolean', default: false },
    timeout: { type: 'string', default: '120' },
    quiet: { type: 'string', default: '3000' },
    teams: { type: 'boolean', default: false },
    conversation: { type: 'string' },
    personal: { type: 'boolean', default: false },
    group: { type: 'boolean', default: false },
  },
});

/** The stand-in to talk to: named by its variable, else the running local stack's. */
async function standIn(kind: 'slack' | 'teams'): Promise<string> {
  const named = process.env[kind === 'slack' ? 'LOCAL_SLACK_URL' : 'LOCAL_TEAMS_URL'];
  if (named) return named.replace(/\/+$/, '');
  const url = (await openLocalStack()).urls[kind];
  if (!url) throw new CliError(`The local stack talks to a real ${kind === 'slack' ? 'Slack workspace' : 'Azure Bot'}: chat there.`);
  return url;
}

async function main(): Promise<number> {
  BASE = await standIn('slack');
  const channel = values.channel;
  const timeoutMs = Number(values.timeout) * 1000;
  const quietMs = Number(values.quiet);
  const info = await call<Info>('/_local/info');
  const asText = (line: string) => (values['no-mention'] ? line : `<@${info.botUserId}> ${line}`);

  // One message, then follow the reply.
  const send = async (line: string, threadTs: string | undefined): Promise<{ threadTs: string; complete: boolean }> => {
    const posted = await post(channel, asText(line), threadTs, values.user);
    const complete = await follow(channel, posted.threadTs, posted.ts, info, timeoutMs, quietMs);
    if (!complete) process.stderr.write(`(no complete reply within ${values.timeout} s)\n`);
    return { threadTs: posted.threadTs, complete };
  };

  if (positionals.length > 0) {
    const { threadTs, complete } = await send(positionals.join(' '), values.thread);
    console.log(`\n${continueHint(channel, threadTs)}`);
    return complete ? 0 : 2;
  }

  // Interactive: every line goes into the same thread.
  console.log(`Chatting with ${info.botName} in ${channel}; watch it at ${BASE}/ . Ctrl-D or /exit to quit.`);
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: 'you> ' });
  let threadTs = values.thread;
  rl.prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === '/exit' || line === '/quit') break;
    if (line) {
      try {
        threadTs = (await send(line, threadTs)).threadTs;
      } catch (error) {
        if (!(error instanceof CliError)) throw error;
        console.error(error.message);
      }
    }
    rl.prompt();
  }
  rl.close();
  if (threadTs) console.log(`\n${continueHint(channel, threadTs)}`);
  return 0;
}

(values.teams ? standIn('teams').then((base) => teamsChat(base, values, positionals)) : main()).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof LocalStackError ? 2 : 1);
  },
);
