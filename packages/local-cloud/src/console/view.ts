// What the console shows of the conversations, as one JSON document: every Slack thread of the local
// stand-in and every Teams conversation, with their messages as the clients show them (mentions as
// @name, streaming ones marked, buttons a person can press), the bot's status line, and the tool
// calls of each thread's context (inputs and results, read from its context.jsonl in the data bucket).
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { buttonsOf, DEFAULT_CHANNEL, type SlackStandIn, type StoredMessage } from '../slack/index.ts';
import { cardButtonsOf, type StoredActivity, type TeamsStandIn } from '../teams/index.ts';
import { dataKeys } from '../../../../shared/ids.ts';
import { encodeTeamsThreadId } from '../../../../shared/platforms/teams/thread-id.ts';

export interface ConsoleButton {
  actionId: string;
  label: string;
  style?: string;
}

export interface ConsoleMessage {
  /** The message's id on its platform (a Slack ts, a Teams activity id): what a button press names. */
  id: string;
  who: string;
  bot: boolean;
  text: string;
  at: number;
  streaming: boolean;
  onlyFor?: string;
  buttons?: ConsoleButton[];
}

export interface ConsoleToolCall {
  id: string;
  name: string;
  input: string;
  result?: string;
  status?: string;
}

export interface ConsoleThread {
  threadId: string;
  platform: 'slack' | 'teams';
  /** Slack: the channel id; Teams: the conversation id. */
  channel: string;
  /** Slack: the thread's ts; Teams: empty (the conversation is the thread). */
  threadTs: string;
  /** Teams: personal, groupChat or channel. */
  kind?: string;
  messages: ConsoleMessage[];
  status?: string;
  toolCalls: ConsoleToolCall[];
  running: boolean;
}

export interface ConsoleUsers {
  slack: { id: string; name: string }[];
  teams: { id: string; name: string }[];
}

export interface ThreadSources {
  slack?: SlackStandIn;
  teams?: TeamsStandIn;
  s3: S3Client;
  bucket: string;
  /** The executions of the agent run state machine: which threads have a run going. */
  executions(): { threadId: string; running: boolean }[];
}

type ContentBlock = {
  toolUse?: { toolUseId: string; name: string; input: unknown };
  toolResult?: { toolUseId: string; status?: string; content?: { text?: string }[] };
};

/** A context's tool calls, each with its result once there is one; read again only when the object changed. */
export function contextReader(s3: S3Client, bucket: string) {
  const cache = new Map<string, { etag: string; calls: ConsoleToolCall[] }>();
  return async (threadId: string): Promise<ConsoleToolCall[]> => {
    const key = dataKeys(threadId).context;
    const known = cache.get(key);
    try {
      const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(known ? { IfNoneMatch: known.etag } : {}) }));
      const calls = toolCallsOf((await out.Body?.transformToString()) ?? '');
      cache.set(key, { etag: out.ETag ?? '', calls });
      return calls;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 304 && known) return known.calls;
      return known?.calls ?? [];
    }
  };
}

export function toolCallsOf(jsonl: string): ConsoleToolCall[] {
  const calls = new Map<string, ConsoleToolCall>();
  for (const line of jsonl.split('\n')) {
    if (!line.trim()) continue;
    let entry: { content?: ContentBlock[] };
    try {
      entry = JSON.parse(line) as { content?: ContentBlock[] };
    } catch {
      continue;
    }
    for (const block of entry.content ?? []) {
      if (block.toolUse) {
        calls.set(block.toolUse.toolUseId, {
          id: block.toolUse.toolUseId,
          name: block.toolUse.name,
          input: JSON.stringify(block.toolUse.input, null, 2),
        });
      } else if (block.toolResult) {
        const call = calls.get(block.toolResult.toolUseId);
        if (call) {
          call.result = (block.toolResult.content ?? []).map((c) => c.text ?? '').join('\n');
          call.status = block.toolResult.status ?? 'success';
        }
      }
    }
  }
  return [...calls.values()];
}

/** Slack's mention markup (`<@U123>`, `<@U123|name>`) as the client shows it: @name. */
export function slackMentionsAsNames(text: string, nameOf: (id: string) => string | undefined): string {
  return text.replace(/<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g, (_, id: string, name?: string) => `@${name ?? nameOf(id) ?? id}`);
}

/** Teams' mention markup (`<at>Name</at>`) and the HTML a bot may send, as the client shows them. */
export function teamsTextAsShown(text: string): string {
  return text
    .replace(/<at>([^<]*)<\/at>/g, '@$1')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

function slackMessage(slack: SlackStandIn, m: StoredMessage): ConsoleMessage {
  const botName = (id: string) => (id === slack.botUserId ? 'agent' : slack.users.get(id)?.name);
  const buttons = buttonsOf(m.blocks).map(({ actionId, label, style }) => ({ actionId, label, ...(style ? { style } : {}) }));
  return {
    id: m.ts,
    who: m.bot_id ? 'agent' : (slack.users.get(m.user)?.name ?? m.user),
    bot: Boolean(m.bot_id),
    text: slackMentionsAsNames(m.text || '', botName),
    at: m.local.createdAt,
    streaming: m.local.stream?.state === 'streaming',
    ...(buttons.length ? { buttons } : {}),
  };
}

function slackThreads(slack: SlackStandIn): Omit<ConsoleThread, 'toolCalls' | 'running'>[] {
  const threads: Omit<ConsoleThread, 'toolCalls' | 'running'>[] = [];
  for (const [channel, list] of slack.messages.channels) {
    const live = list.filter((m) => !m.local.deleted);
    for (const top of live.filter((m) => !m.thread_ts || m.thread_ts === m.ts)) {
      const messages = live.filter((m) => m.ts === top.ts || m.thread_ts === top.ts).map((m) => slackMessage(slack, m));
      const onlyFor = slack.ephemeral
        .filter((e) => e.channel === channel && e.thread_ts === top.ts)
        .map((e) => ({ ...slackMessage(slack, e), onlyFor: slack.users.get(e.visibleTo)?.name ?? e.visibleTo }));
      const status = slack.statuses.get(`${channel}:${top.ts}`);
      threads.push({
        threadId: `slack:${channel}:${top.ts}`,
        platform: 'slack',
        channel,
        threadTs: top.ts,
        messages: [...messages, ...onlyFor].sort((a, b) => a.at - b.at),
        ...(status ? { status } : {}),
      });
    }
  }
  return threads;
}

/** A Teams message as its client shows it: a card shows its text blocks; a streamed one is marked until its final message. */
function teamsMessage(teams: TeamsStandIn, a: StoredActivity): ConsoleMessage {
  const bot = !teams.state.users.has(a.from.id);
  const cardText = ((a.attachments ?? []) as { content?: { body?: { type?: string; text?: string }[] } }[])
    .flatMap((c) => c.content?.body ?? [])
    .filter((b) => b.type === 'TextBlock' && b.text)
    .map((b) => b.text!)
    .join('\n');
  const buttons = cardButtonsOf(a.attachments).map((b) => ({
    actionId: b.data.actionId,
    label: b.title,
    ...(b.style ? { style: b.style } : {}),
  }));
  return {
    id: a.id,
    who: bot ? 'agent' : (a.from.name ?? a.from.id),
    bot,
    text: teamsTextAsShown(a.text || cardText),
    at: Date.parse(a.timestamp),
    streaming: Boolean(a.stream && !a.stream.final),
    ...(a.targeted ? { onlyFor: 'one person' } : {}),
    ...(buttons.length ? { buttons } : {}),
  };
}

function teamsThreads(teams: TeamsStandIn): Omit<ConsoleThread, 'toolCalls' | 'running'>[] {
  return [...teams.state.activities.keys()].map((conversationId) => {
    const kind = teams.state.conversationTypes.get(conversationId);
    return {
      threadId: encodeTeamsThreadId({ conversationId, serviceUrl: teams.serviceUrl, ...(kind ? { conversationType: kind } : {}) }),
      platform: 'teams' as const,
      channel: conversationId,
      threadTs: '',
      ...(kind ? { kind } : {}),
      messages: teams.state
        .messages(conversationId)
        .filter((a) => !a.deleted && (a.text || a.attachments?.length))
        .map((a) => teamsMessage(teams, a)),
    };
  });
}

export async function consoleThreads(sources: ThreadSources, toolCalls: (threadId: string) => Promise<ConsoleToolCall[]>) {
  const executions = sources.executions();
  const found = [...(sources.slack ? slackThreads(sources.slack) : []), ...(sources.teams ? teamsThreads(sources.teams) : [])];
  const threads: ConsoleThread[] = await Promise.all(
    found.map(async (t) => ({
      ...t,
      toolCalls: await toolCalls(t.threadId),
      running: executions.some((e) => e.threadId === t.threadId && e.running),
    })),
  );
  threads.sort((a, b) => (b.messages.at(-1)?.at ?? 0) - (a.messages.at(-1)?.at ?? 0));
  const users: ConsoleUsers = {
    slack: [...(sources.slack?.users.values() ?? [])].filter((u) => !u.is_bot).map((u) => ({ id: u.id, name: u.name })),
    teams: [...(sources.teams?.state.users.values() ?? [])].map((u) => ({ id: u.id, name: u.name })),
  };
  return {
    threads,
    // The stand-in's default channel is offered before anyone has written in it.
    channels: sources.slack ? [...new Set([DEFAULT_CHANNEL, ...sources.slack.messages.channels.keys()])] : [],
    users,
    runs: { running: executions.filter((e) => e.running).length, total: executions.length },
  };
}
