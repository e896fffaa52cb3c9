// What the stand-in sends to the bot: activities shaped like the ones Teams sends (the recorded
// payloads in test/fixtures/chat-sdk-replay/ show them), each POSTed to the messaging endpoint with a
// Bot Framework token signed by the stand-in's key.
import { randomUUID } from 'node:crypto';
import { cardButtonsOf } from './cards.ts';
import { signActivityToken, type SigningKey } from './keys.ts';
import { DEFAULT_TEAM_CHANNEL, nextActivityId, randomId, type ConversationType, type TeamsState, type TeamsUser } from './state.ts';

export interface BotIdentity {
  appId: string;
  name: string;
  /** The tenant every user of the stand-in belongs to. */
  tenantId: string;
}

export interface UserMessageInput {
  /** Where: a new channel thread (default), a reply in an existing conversation, a group chat or a personal chat. */
  kind?: ConversationType;
  /** An existing conversation to post in (a channel thread's id includes ;messageid=). */
  conversationId?: string;
  text: string;
  /** Whether the text mentions the bot (default: in a new channel thread or group chat, yes). */
  mention?: boolean;
  user?: TeamsUser;
  /** Files the user attaches: Teams keeps them behind the Connector, for the bot's token only. */
  files?: { name: string; contentType: string; data: Buffer }[];
  /** Extra activity fields (attachments, value for card actions). */
  extra?: Record<string, unknown>;
}

export interface Delivery {
  activity: Record<string, unknown>;
  status: number;
  body: string;
}

export function createActivitySource(state: TeamsState, key: SigningKey, bot: BotIdentity, baseUrl: () => string) {
  let messagingEndpoint: string | undefined;
  const deliveries: Delivery[] = [];
  const serviceUrl = () => `${baseUrl()}/`;
  const botAccountId = `28:${bot.appId}`;

  function conversationFor(input: UserMessageInput, activityId: string): { id: string; type: ConversationType } {
    if (input.conversationId)
      return { id: input.conversationId, type: state.conversationTypes.get(input.conversationId) ?? input.kind ?? 'channel' };
    const type = input.kind ?? 'channel';
    const id =
      type === 'channel'
        ? `${DEFAULT_TEAM_CHANNEL};messageid=${activityId}`
        : type === 'groupChat'
          ? `19:${randomId()}@thread.v2`
          : `a:${randomId(24)}`;
    state.conversationTypes.set(id, type);
    return { id, type };
  }

  function userActivity(input: UserMessageInput): Record<string, unknown> {
    const id = nextActivityId();
    const user = input.user ?? [...state.users.values()][0]!;
    const conversation = conversationFor(input, id);
    const mention = input.mention ?? (!input.conversationId && conversation.type !== 'personal');
    const at = `<at>${bot.name}</at>`;
    const attachments = (input.files ?? []).map((file) => {
      const fileId = randomId();
      state.files.set(fileId, file);
      return { contentType: file.contentType, contentUrl: `${serviceUrl()}v3/attachments/${fileId}/views/original`, name: file.name };
    });
    return {
      type: 'message',
      id,
      timestamp: new Date().toISOString(),
      channelId: 'msteams',
      serviceUrl: serviceUrl(),
      from: { id: user.id, name: user.name, aadObjectId: user.aadObjectId },
      conversation: {
        isGroup: conversation.type !== 'personal',
        conversationType: conversation.type,
        tenantId: bot.tenantId,
        id: conversation.id,
      },
      recipient: { id: botAccountId, name: bot.name },
      text: mention ? `${at} ${input.text}` : input.text,
      textFormat: 'plain',
      entities: mention ? [{ type: 'mention', mentioned: { id: botAccountId, name: bot.name }, text: at }] : [],
      ...(attachments.length ? { attachments } : {}),
      channelData:
        conversation.type === 'channel'
          ? {
              teamsChannelId: DEFAULT_TEAM_CHANNEL,
              channel: { id: DEFAULT_TEAM_CHANNEL },
              team: { id: '19:local-team@thread.tacv2' },
              tenant: { id: bot.tenantId },
            }
          : { tenant: { id: bot.tenantId } },
      ...input.extra,
    };
  }

  /** POST an activity to the bot as Teams would: with a token signed by the stand-in's key. */
  async function deliver(activity: Record<string, unknown>, token?: string): Promise<Delivery> {
    if (!messagingEndpoint) throw new Error('Teams stand-in: no messaging endpoint set');
    const authorization =
      token ?? (await signActivityToken(key, { issuer: baseUrl(), audience: bot.appId, serviceUrl: String(activity.serviceUrl) }));
    const response = await fetch(messagingEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${authorization}` },
      body: JSON.stringify(activity),
    });
    const delivery = { activity, status: response.status, body: await response.text() };
    deliveries.push(delivery);
    return delivery;
  }

  return {
    deliveries,
    serviceUrl,
    userActivity,
    deliver,
    /** A user's message, recorded in the conversation and delivered to the bot. */
    async sendUserMessage(input: UserMessageInput) {
      const activity = userActivity(input);
      const conversationId = (activity.conversation as { id: string }).id;
      state.add({
        id: String(activity.id),
        type: 'message',
        conversationId,
        from: activity.from as StoredFrom,
        text: String(activity.text),
        entities: activity.entities as unknown[],
        attachments: activity.attachments as unknown[] | undefined,
        edits: 0,
        deleted: false,
        timestamp: String(activity.timestamp),
      });
      const delivery = await deliver(activity);
      return { conversationId, activityId: String(activity.id), delivery };
    },
    /**
     * `user` presses the button `actionId` of a card the bot sent, as the Teams client reports an
     * Action.Submit: a message activity replying to the card, whose value is the button's data.
     * Refused when the message has no such button.
     */
    async pressCardButton(input: { conversationId: string; activityId: string; actionId: string; user?: TeamsUser }) {
      const card = state.find(input.conversationId, input.activityId);
      const button = cardButtonsOf(card?.attachments).find((b) => b.data.actionId === input.actionId);
      if (!card || card.deleted || !button) throw new Error(`No button ${input.actionId} on activity ${input.activityId}`);
      const activity = userActivity({
        conversationId: input.conversationId,
        text: '',
        mention: false,
        ...(input.user ? { user: input.user } : {}),
        extra: { replyToId: card.id, value: button.data },
      });
      return deliver(activity);
    },
    /** The user of this name, added to the tenant the first time (as another person joining the team). */
    userNamed(name: string): TeamsUser {
      const known = [...state.users.values()].find((u) => u.name === name);
      if (known) return known;
      const user = { id: `29:1${randomId(12)}`, name, aadObjectId: randomUUID() };
      state.users.set(user.id, user);
      return user;
    },
    setMessagingEndpoint(url: string) {
      messagingEndpoint = url;
    },
    messagingEndpoint: () => messagingEndpoint,
  };
}

type StoredFrom = { id: string; name?: string };
export type ActivitySource = ReturnType<typeof createActivitySource>;
