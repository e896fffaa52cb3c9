// The Events API side: a user's message is stored and delivered as Slack would, as signed
// `event_callback` POSTs to the events URL in the shape Slack sends them.
import { createHmac, randomUUID } from 'node:crypto';
import { fileShape, mimeTypeOf } from './shapes.ts';
import { DEFAULT_CHANNEL, DEFAULT_USER, nextTs, randomId, storeMessage, type Delivery, type StoredFile, type Workspace } from './state.ts';

export interface PostUserMessageInput {
  channel?: string;
  text: string;
  threadTs?: string;
  user?: string;
  /** Which events to deliver; by default what Slack sends an app subscribed to app_mention,
   * message.channels, message.groups and message.im. */
  events?: ('message' | 'app_mention')[];
  /** Files the user attaches (as Slack shares them: url_private, downloadable with the bot token). */
  files?: { name: string; content: Buffer | string; mimetype?: string }[];
}

export interface PostUserMessageResult {
  ts: string;
  channel: string;
  /** The thread the message belongs to (its own ts when it starts one). */
  threadTs: string;
  /** HTTP status of the delivery (the first failing one if any failed); null when no events URL
   * is set or the request never got a response. */
  status: number | null;
  deliveries: Delivery[];
}

type Args = Record<string, unknown>;

export interface PressButtonInput {
  user: string;
  channel: string;
  /** The message the button is on. */
  messageTs: string;
  actionId: string;
}

export interface MessageButton {
  actionId: string;
  label: string;
  value?: string;
  blockId?: string;
  style?: string;
}

/** The buttons of a message's `actions` blocks, as the Slack client shows them. */
export function buttonsOf(blocks: unknown): MessageButton[] {
  const list = (typeof blocks === 'string' ? (JSON.parse(blocks) as unknown) : blocks) as
    | {
        type?: string;
        block_id?: string;
        elements?: { type?: string; action_id?: string; value?: string; style?: string; text?: { text?: string } }[];
      }[]
    | undefined;
  if (!Array.isArray(list)) return [];
  return list
    .filter((block) => block.type === 'actions')
    .flatMap((block) =>
      (block.elements ?? [])
        .filter((e) => e.type === 'button' && e.action_id)
        .map((e) => ({
          actionId: e.action_id!,
          label: e.text?.text ?? e.action_id!,
          ...(e.value === undefined ? {} : { value: e.value }),
          ...(block.block_id ? { blockId: block.block_id } : {}),
          ...(e.style ? { style: e.style } : {}),
        })),
    );
}

/** Slack's v0 request signature: HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing secret. */
export function signSlackRequest(body: string, secret: string, timestamp: number = Math.floor(Date.now() / 1000)): Record<string, string> {
  const digest = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
  return { 'X-Slack-Signature': `v0=${digest}`, 'X-Slack-Request-Timestamp': String(timestamp) };
}

const channelType = (channel: string): string => (channel.startsWith('D') ? 'im' : channel.startsWith('G') ? 'group' : 'channel');

/** rich_text blocks like the Slack client sends with a user's message. */
function richTextBlocks(text: string): unknown[] {
  const elements: Record<string, unknown>[] = [];
  const pattern = /<([@#])([A-Z0-9]+)(?:\|[^>]*)?>|<(https?:\/\/[^>|]+)(?:\|([^>]*))?>/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) elements.push({ type: 'text', text: text.slice(last, match.index) });
    if (match[1] === '@') elements.push({ type: 'user', user_id: match[2] });
    else if (match[1] === '#') elements.push({ type: 'channel', channel_id: match[2] });
    else elements.push({ type: 'link', url: match[3], ...(match[4] ? { text: match[4] } : {}) });
    last = match.index + match[0].length;
  }
  if (last < text.length) elements.push({ type: 'text', text: text.slice(last) });
  return [{ type: 'rich_text', block_id: randomId('', 5), elements: [{ type: 'rich_text_section', elements }] }];
}

export function createEventSource(workspace: Workspace, signingSecret: string, baseUrl: () => string) {
  const { teamId, appId, botUserId } = workspace.identity;
  let eventsUrl: string | undefined;

  /** Sign and POST an Events API envelope to the events URL. */
  async function deliver(payload: Record<string, unknown>): Promise<Delivery> {
    const event = payload.event as Args | undefined;
    const base = { url: eventsUrl ?? '', eventId: String(payload.event_id ?? ''), type: String(event?.type ?? payload.type), payload };
    let delivery: Delivery = { ...base, status: null, ms: 0, error: 'no events URL set' };
    if (eventsUrl) delivery = await post(eventsUrl, base);
    if (delivery.ms > 3000) delivery.error = `took ${delivery.ms} ms; Slack gives up after 3 s and retries`;
    workspace.deliveries.push(delivery);
    return delivery;
  }

  async function post(url: string, base: Omit<Delivery, 'status' | 'ms'>): Promise<Delivery> {
    const body = JSON.stringify(base.payload);
    const started = Date.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
          ...signSlackRequest(body, signingSecret),
        },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      await response.arrayBuffer();
      return { ...base, status: response.status, ms: Date.now() - started };
    } catch (error) {
      return { ...base, status: null, ms: Date.now() - started, error: error instanceof Error ? error.message : String(error) };
    }
  }

  function envelope(event: Args): Record<string, unknown> {
    const context = { et: event.type, tid: teamId, aid: appId, cid: event.channel };
    return {
      token: 'localverificationtoken',
      team_id: teamId,
      context_team_id: teamId,
      context_enterprise_id: null,
      api_app_id: appId,
      event,
      type: 'event_callback',
      event_id: randomId('Ev0', 9),
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ enterprise_id: null, team_id: teamId, user_id: botUserId, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(JSON.stringify(context)).toString('base64url')}`,
    };
  }

  function attach(files: NonNullable<PostUserMessageInput['files']>): Record<string, unknown>[] {
    return files.map((f) => {
      const bytes = Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content);
      const id = randomId('F0');
      const mimetype = f.mimetype ?? mimeTypeOf(f.name);
      const stored: StoredFile = {
        id,
        name: f.name,
        title: f.name,
        mimetype,
        length: bytes.length,
        bytes,
        created: Math.floor(Date.now() / 1000),
      };
      workspace.files.set(id, stored);
      return fileShape(stored, baseUrl());
    });
  }

  /** Signs and POSTs form fields (an interaction's `payload`) to the events URL, as Slack sends interactions. */
  async function deliverForm(fields: Record<string, string>, type: string): Promise<Delivery> {
    const body = new URLSearchParams(fields).toString();
    const base = { url: eventsUrl ?? '', eventId: '', type, payload: JSON.parse(fields.payload ?? '{}') as Record<string, unknown> };
    if (!eventsUrl) return { ...base, status: null, ms: 0, error: 'no events URL set' };
    const started = Date.now();
    let delivery: Delivery;
    try {
      const response = await fetch(eventsUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...signSlackRequest(body, signingSecret) },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      await response.arrayBuffer();
      delivery = { ...base, status: response.status, ms: Date.now() - started };
    } catch (error) {
      delivery = { ...base, status: null, ms: Date.now() - started, error: error instanceof Error ? error.message : String(error) };
    }
    workspace.deliveries.push(delivery);
    return delivery;
  }

  /**
   * `user` clicks the button `actionId` of a message, as the Slack client reports it: a signed
   * `block_actions` interaction. Refused when the message has no such button (a client cannot click it).
   */
  async function pressButton(input: PressButtonInput): Promise<Delivery> {
    const message = workspace.findMessage(input.channel, input.messageTs);
    const button = buttonsOf(message?.blocks).find((b) => b.actionId === input.actionId);
    if (!message || !button) throw new Error(`No button ${input.actionId} on message ${input.messageTs} in ${input.channel}`);
    const user = workspace.users.get(input.user);
    const name = user?.name ?? input.user.toLowerCase();
    const payload = {
      type: 'block_actions',
      user: { id: input.user, username: name, name, team_id: teamId },
      api_app_id: appId,
      token: 'localverificationtoken',
      container: {
        type: 'message',
        message_ts: message.ts,
        channel_id: input.channel,
        is_ephemeral: false,
        ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
      },
      trigger_id: `${Date.now()}.${randomId('', 8)}`,
      team: { id: teamId, domain: 'local' },
      channel: { id: input.channel, name: workspace.channelNames.get(input.channel) ?? input.channel.toLowerCase() },
      message: { user: message.user, type: 'message', ts: message.ts, ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}) },
      actions: [
        {
          type: 'button',
          block_id: button.blockId,
          action_id: button.actionId,
          text: { type: 'plain_text', text: button.label, emoji: true },
          ...(button.value === undefined ? {} : { value: button.value }),
          action_ts: nextTs(),
        },
      ],
      response_url: `${baseUrl()}/_local/response/${randomId('', 8)}`,
    };
    return deliverForm({ payload: JSON.stringify(payload) }, 'block_actions');
  }

  /** Store a user's message and deliver it as Slack would (app_mention + message for a mention
   * in a channel, message only otherwise; DMs as message with channel_type "im"). */
  async function postUserMessage(input: PostUserMessageInput): Promise<PostUserMessageResult> {
    const channel = input.channel ?? DEFAULT_CHANNEL;
    if (!workspace.ensureChannel(channel)) throw new Error(`Invalid Slack channel id: ${channel}`);
    const user = input.user ?? DEFAULT_USER;
    if (!workspace.users.has(user)) workspace.users.set(user, { id: user, name: user.toLowerCase(), real_name: user, is_bot: false });
    const files = attach(input.files ?? []);
    const fields = { user, text: input.text, thread_ts: input.threadTs, client_msg_id: randomUUID(), blocks: richTextBlocks(input.text) };
    const m = storeMessage(workspace, channel, { ...fields, ...(files.length ? { files } : {}) }, 'user');
    const base: Args = {
      user,
      ts: m.ts,
      client_msg_id: m.client_msg_id,
      text: m.text,
      team: teamId,
      ...(m.thread_ts ? { thread_ts: m.thread_ts, parent_user_id: m.parent_user_id } : {}),
      blocks: m.blocks,
      channel,
      event_ts: m.ts,
      ...(files.length ? { files } : {}),
    };
    const mentioned = new RegExp(`<@${botUserId}(\\|[^>]*)?>`).test(input.text);
    const types = input.events ?? (mentioned && !channel.startsWith('D') ? ['message', 'app_mention'] : ['message']);
    const deliveries: Delivery[] = [];
    for (const type of types) {
      const event = type === 'message' ? { type, ...base, channel_type: channelType(channel) } : { type, ...base };
      deliveries.push(await deliver(envelope(event)));
    }
    const failed = deliveries.find((d) => d.status === null || d.status >= 300);
    const status = failed ? failed.status : (deliveries[0]?.status ?? null);
    return { ts: m.ts, channel, threadTs: m.thread_ts ?? m.ts, status, deliveries };
  }

  return {
    envelope,
    postUserMessage,
    pressButton,
    eventsUrl: () => eventsUrl,
    setEventsUrl(url: string | undefined): void {
      eventsUrl = url;
    },
  };
}

export type EventSource = ReturnType<typeof createEventSource>;
