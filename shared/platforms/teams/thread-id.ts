// Teams thread ids as the Chat SDK Teams adapter writes them: `teams:` + the conversation id and the
// serviceUrl, each base64url, and the conversation type where the id does not imply it. The same
// codec as the adapter's, without loading the adapter (and the Teams SDK under it): functions that
// only post replies use it (test/unit/teams-ids.test.ts checks both agree).
import { ValidationError } from '@chat-adapter/shared';

export type TeamsConversationType = 'personal' | 'groupChat' | 'channel';

export interface TeamsThreadId {
  conversationId: string;
  serviceUrl: string;
  conversationType?: TeamsConversationType;
}

const TYPES: readonly string[] = ['personal', 'groupChat', 'channel'];
const b64 = (s: string) => Buffer.from(s).toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url').toString('utf8');

/** A channel thread's conversation id ends with `;messageid=` its root post's id; without it, the channel itself. */
export const baseConversationId = (conversationId: string) => conversationId.replace(/;messageid=\d+/, '');

export function encodeTeamsThreadId({ conversationId, serviceUrl, conversationType }: TeamsThreadId): string {
  // Ids not starting with 19: are personal chats; the type is written only where that rule is wrong.
  const needsType = conversationType !== undefined && (conversationType === 'personal') !== !conversationId.startsWith('19:');
  return `teams:${b64(conversationId)}:${b64(serviceUrl)}${needsType ? `:${conversationType}` : ''}`;
}

export function decodeTeamsThreadId(threadId: string): TeamsThreadId {
  const [platform, conversation, serviceUrl, type, ...rest] = threadId.split(':');
  if (platform !== 'teams' || conversation === undefined || serviceUrl === undefined || rest.length > 0) {
    throw new ValidationError('teams', `Invalid Teams thread ID: ${threadId}`);
  }
  if (type !== undefined && !TYPES.includes(type)) throw new ValidationError('teams', `Invalid Teams conversation type: ${type}`);
  const decoded: TeamsThreadId = { conversationId: unb64(conversation), serviceUrl: unb64(serviceUrl) };
  if (type) decoded.conversationType = type as TeamsConversationType;
  return decoded;
}

/** The conversation's type, written or implied by its id. */
export function teamsConversationType({ conversationId, conversationType }: TeamsThreadId): TeamsConversationType {
  if (conversationType) return conversationType;
  return conversationId.includes(';messageid=') ? 'channel' : conversationId.startsWith('19:') ? 'groupChat' : 'personal';
}
