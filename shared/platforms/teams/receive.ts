// Receiving Teams activities without the Teams SDK: the Connector adapter's handleWebhook (the Teams
// webhook's). The request's Bot Framework token is checked first (auth.ts); the activity is read with
// the Teams adapter package's own SDK-free parser (`@chat-adapter/teams/webhook`) and turned into the
// Chat SDK's Message and action events as the full Teams adapter does: the same thread ids (stored
// ids and replies depend on them), `<at>` mentions as `@name`, the same attachments, the author by
// Teams id. Messages and card button presses reach the chat; other activities (members joining,
// reactions, installs) are acknowledged and dropped, as this bot has no handler for them.
import {
  extractTeamsAttachments,
  isTeamsMention,
  parseTeamsWebhookBody,
  TeamsWebhookParseError,
  type TeamsActivity,
  type TeamsWebhookAttachment,
} from '@chat-adapter/teams/webhook';
import { teamsHtmlToMarkdown } from '@chat-adapter/teams/format';
import {
  Message,
  parseMarkdown,
  toPlainText,
  type Adapter,
  type Attachment,
  type ChatInstance,
  type Logger,
  type WebhookOptions,
} from 'chat';
import { CHAT_VALUE } from '../../table.ts';
import { baseConversationId, encodeTeamsThreadId, type TeamsConversationType } from './thread-id.ts';

export interface TeamsReceiving {
  appId: string;
  /** auth.ts's verifier: throws (with the reason) on a token that must be refused. */
  verify(request: Request, body: string): Promise<unknown>;
  logger: Logger;
}

/** What an Adaptive Card `Action.Execute`/invoke gets back: Teams shows no message for it. */
const INVOKE_DONE = { statusCode: 200, type: 'application/vnd.microsoft.activity.message', value: '' };
/** As long as the Teams adapter keeps it. */
const GRAPH_CONTEXT_TTL_MS = 30 * 24 * 3600 * 1000;
const FILE_DOWNLOAD_INFO = 'application/vnd.microsoft.teams.file.download.info';

/** The conversation's type as the activity states or implies it (undefined when it does neither). */
export function conversationTypeOf(activity: TeamsActivity): TeamsConversationType | undefined {
  const conversation = activity.conversation as { conversationType?: string; isGroup?: boolean } | undefined;
  const stated = conversation?.conversationType;
  if (stated === 'personal' || stated === 'groupChat' || stated === 'channel') return stated;
  if (conversation?.isGroup === false) return 'personal';
  if (conversation?.isGroup === true) return activity.channelData?.team?.id ? 'channel' : 'groupChat';
  return undefined;
}

export function threadIdOfActivity(activity: TeamsActivity): string {
  return encodeTeamsThreadId({
    conversationId: activity.conversation?.id ?? '',
    serviceUrl: activity.serviceUrl ?? '',
    conversationType: conversationTypeOf(activity),
  });
}

/** A Teams account id (`28:<appId>` or the bare app id) of this bot; Teams' GUID casing varies. */
function isBot(accountId: string | undefined, appId: string): boolean {
  const id = accountId?.toLowerCase();
  const app = appId.toLowerCase();
  return id !== undefined && (id === app || id.endsWith(`:${app}`));
}

/** https origins, or http on a loopback host (a local Bot Connector): where the bot's token may be sent. */
function connectorOrigin(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol === 'https:') return parsed.origin;
    if (parsed.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname)) return parsed.origin;
  } catch {
    // not a URL: no origin
  }
  return undefined;
}

const MIME_BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  apng: 'image/apng',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
  txt: 'text/plain',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

function kindOf(mimeType: string | undefined): Attachment['type'] {
  const major = mimeType?.split('/')[0];
  return major === 'image' || major === 'video' || major === 'audio' ? major : 'file';
}

/**
 * A file of the message. Files on the conversation's own Connector are fetched with the bot's token
 * (the Connector adapter's rehydrateAttachment checks the thread again before sending it); a
 * SharePoint file's pre-signed download URL, and anything else, without it.
 */
function attachmentOf(attachment: TeamsWebhookAttachment, serviceUrl: string | undefined): Attachment {
  const download = attachment.contentType === FILE_DOWNLOAD_INFO ? (attachment.content as Record<string, unknown> | undefined) : undefined;
  const url = download ? (typeof download.downloadUrl === 'string' ? download.downloadUrl : undefined) : attachment.contentUrl;
  let mimeType = attachment.contentType;
  if (download) {
    const stated = typeof download.fileType === 'string' ? download.fileType : undefined;
    const extension = (stated || attachment.name?.split('.').pop() || '').toLowerCase().replace(/^\./, '');
    mimeType = MIME_BY_EXTENSION[extension] ?? 'application/octet-stream';
  }
  const origin = connectorOrigin(serviceUrl);
  const botAuth = !download && url !== undefined && origin !== undefined && connectorOrigin(url) === origin;
  const fetchMetadata = url ? (botAuth ? { url, auth: 'bot', connectorOrigin: origin } : { url }) : undefined;
  return { type: kindOf(mimeType), url, name: attachment.name, mimeType, fetchMetadata } as Attachment;
}

/** The Chat SDK message of a Teams message activity. */
export function teamsMessageOf(activity: TeamsActivity, attachments: TeamsWebhookAttachment[], appId: string, threadId: string): Message {
  const markdown = teamsHtmlToMarkdown((activity.text ?? '').trim());
  const formatted = parseMarkdown(markdown);
  const name = activity.from?.name || 'unknown';
  const timestamp = (activity as { timestamp?: string }).timestamp;
  return new Message({
    id: activity.id ?? '',
    threadId,
    text: toPlainText(formatted),
    formatted,
    raw: activity,
    author: { userId: activity.from?.id || 'unknown', userName: name, fullName: name, isBot: false, isMe: isBot(activity.from?.id, appId) },
    metadata: { dateSent: timestamp ? new Date(timestamp) : new Date(), edited: false },
    // Cards the bot sent come back as attachments, and so does the message's own HTML: not files.
    attachments: attachments
      .filter((a) => a.contentType !== 'application/vnd.microsoft.card.adaptive')
      .filter((a) => !(a.contentType === 'text/html' && !a.contentUrl))
      .map((a) => attachmentOf(a, activity.serviceUrl)),
  });
}

/**
 * Where Microsoft Graph finds the conversation (the Connector adapter reads it to fetch history):
 * a channel's team and channel, or a personal chat's Graph id.
 */
function graphContextOf(activity: TeamsActivity, appId: string): { key: string; value: string } | undefined {
  const base = baseConversationId(activity.conversation?.id ?? '');
  const team = (activity.channelData?.team as { aadGroupId?: string } | undefined)?.aadGroupId;
  const channel = activity.channelData?.channel?.id ?? (base.startsWith('19:') ? base : undefined);
  const type = conversationTypeOf(activity);
  const personal = type ? type === 'personal' : !base.startsWith('19:');
  const aad = activity.from?.aadObjectId;
  if (aad && personal)
    return {
      key: CHAT_VALUE.teamsChannelContext(base),
      value: JSON.stringify({ type: 'dm', graphChatId: `19:${aad}_${appId}@unq.gbl.spaces` }),
    };
  if (team && channel) return { key: CHAT_VALUE.teamsChannelContext(base), value: JSON.stringify({ teamId: team, channelId: channel }) };
  return undefined;
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** The Teams webhook's request: verified, parsed, handed to the chat; the response Teams expects. */
export async function receiveTeamsRequest(
  adapter: Adapter,
  chat: ChatInstance,
  receiving: TeamsReceiving,
  request: Request,
  options: WebhookOptions | undefined,
  written: Map<string, string>,
): Promise<Response> {
  const body = await request.text();
  try {
    await receiving.verify(request, body);
  } catch (error) {
    receiving.logger.warn('Teams request refused', { reason: (error as Error).message });
    return new Response('Unauthorized', { status: 401 });
  }
  let activity: TeamsActivity;
  try {
    activity = parseTeamsWebhookBody(body).raw;
  } catch (error) {
    if (error instanceof TeamsWebhookParseError) return new Response('Invalid JSON', { status: 400 });
    throw error;
  }
  const context = graphContextOf(activity, receiving.appId);
  // Written when it changes, not on every message of the conversation.
  if (context && written.get(context.key) !== context.value) {
    await chat.getState().set(context.key, context.value, GRAPH_CONTEXT_TTL_MS);
    written.set(context.key, context.value);
  }
  const threadId = threadIdOfActivity(activity);
  // A button press: Action.Submit arrives as a message whose value is the button's data, an
  // Adaptive Card invoke carries it in value.action.data.
  const invoked = activity.type === 'invoke' && activity.name === 'adaptiveCard/action';
  const pressed = (invoked ? (activity.value?.action as { data?: unknown } | undefined)?.data : activity.value) as
    { actionId?: string; value?: string } | undefined;
  if (activity.type === 'message' && !pressed?.actionId) {
    const message = teamsMessageOf(activity, extractTeamsAttachments(activity), receiving.appId, threadId);
    if (isTeamsMention(activity, receiving.appId)) message.isMention = true;
    void chat.processMessage(adapter, threadId, message, options);
    return new Response(null, { status: 200 });
  }
  if (activity.type === 'message' || invoked) {
    const value = pressed;
    if (value?.actionId) {
      const name = activity.from?.name || 'unknown';
      chat.processAction(
        {
          actionId: value.actionId,
          value: value.value,
          user: { userId: activity.from?.id || 'unknown', userName: name, fullName: name, isBot: false, isMe: false },
          messageId: activity.replyToId || activity.id || '',
          threadId,
          adapter,
          raw: activity,
        },
        options,
      );
    }
    return invoked ? json(200, INVOKE_DONE) : new Response(null, { status: 200 });
  }
  return new Response(null, { status: 200 });
}
