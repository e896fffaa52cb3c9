// What the console shows, as one JSON document: every Slack thread of the local stand-in with its
// messages (streaming ones marked), the bot's status line, and the tool calls of its context (inputs
// and results, read from the thread's context.jsonl in the data bucket); and the runs going now.
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SlackStandIn, StoredMessage } from '../slack/index.ts';
import { dataKeys } from '../../../../shared/ids.ts';

export interface ConsoleMessage {
  who: string;
  bot: boolean;
  text: string;
  at: number;
  streaming: boolean;
  onlyFor?: string;
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
  platform: 'slack';
  channel: string;
  threadTs: string;
  messages: ConsoleMessage[];
  status?: string;
  toolCalls: ConsoleToolCall[];
  running: boolean;
}

export interface ConsoleView {
  threads: ConsoleThread[];
  runs: { running: number; total: number };
  channels: string[];
  users: string[];
}

export interface ViewSources {
  slack: SlackStandIn;
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

function toolCallsOf(jsonl: string): ConsoleToolCall[] {
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

function messageOf(slack: SlackStandIn, m: StoredMessage): ConsoleMessage {
  const who = m.bot_id ? 'agent' : (slack.users.get(m.user)?.name ?? m.user);
  const text = (m.text || '').replace(/<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g, (_, id: string, name?: string) =>
    id === slack.botUserId ? '@agent' : `@${name ?? slack.users.get(id)?.name ?? id}`,
  );
  return { who, bot: Boolean(m.bot_id), text, at: m.local.createdAt, streaming: m.local.stream?.state === 'streaming' };
}

export async function consoleView(sources: ViewSources, toolCalls: (threadId: string) => Promise<ConsoleToolCall[]>): Promise<ConsoleView> {
  const { slack } = sources;
  const executions = sources.executions();
  const threads: ConsoleThread[] = [];
  for (const [channel, list] of slack.messages.channels) {
    const live = list.filter((m) => !m.local.deleted);
    for (const top of live.filter((m) => !m.thread_ts || m.thread_ts === m.ts)) {
      const threadId = `slack:${channel}:${top.ts}`;
      const messages = live.filter((m) => m.ts === top.ts || m.thread_ts === top.ts).map((m) => messageOf(slack, m));
      const onlyFor = slack.ephemeral
        .filter((e) => e.channel === channel && e.thread_ts === top.ts)
        .map((e) => ({ ...messageOf(slack, e), onlyFor: e.visibleTo }));
      const status = slack.statuses.get(`${channel}:${top.ts}`);
      threads.push({
        threadId,
        platform: 'slack',
        channel,
        threadTs: top.ts,
        messages: [...messages, ...onlyFor].sort((a, b) => a.at - b.at),
        ...(status ? { status } : {}),
        toolCalls: await toolCalls(threadId),
        running: executions.some((e) => e.threadId === threadId && e.running),
      });
    }
  }
  threads.sort((a, b) => (b.messages.at(-1)?.at ?? 0) - (a.messages.at(-1)?.at ?? 0));
  return {
    threads,
    runs: { running: executions.filter((e) => e.running).length, total: executions.length },
    channels: [...slack.messages.channels.keys()],
    users: [...slack.users.values()].filter((u) => !u.is_bot).map((u) => u.id),
  };
}
