// Where a Teams conversation lives. Teams tells a bot a conversation's serviceUrl (the regional
// Connector endpoint replies must go to) only inside the activities it sends; the thread id of every
// prompt carries it, and this record keeps it per channel, without expiry, so an event file or a bus
// event can start a new thread in a Teams channel long after anyone talked to the bot there.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  decodeTeamsThreadId as decodeThreadId,
  encodeTeamsThreadId as encodeThreadId,
  teamsConversationType,
  type TeamsThreadId,
} from './thread-id.ts';
import { parseThreadId } from '../../ids.ts';
import { teamsConversationKey } from '../../table.ts';

export interface ConversationStore {
  db: DynamoDBDocumentClient;
  tableName: string;
  now?: () => number;
}

export interface ConversationReference {
  /** The Teams channel id (`19:…@thread.tacv2`), or a chat's conversation id. */
  channelId: string;
  serviceUrl: string;
  conversationType?: TeamsThreadId['conversationType'];
  updatedAt: string;
}

/** Records the conversation a Teams thread belongs to (its channel, serviceUrl and type). */
export async function rememberTeamsConversation(store: ConversationStore, threadId: string): Promise<void> {
  const { channel } = parseThreadId(threadId);
  const target = decodeThreadId(threadId);
  const reference: ConversationReference = {
    channelId: channel,
    serviceUrl: target.serviceUrl,
    conversationType: teamsConversationType(target),
    updatedAt: new Date((store.now ?? Date.now)()).toISOString(),
  };
  await store.db.send(new PutCommand({ TableName: store.tableName, Item: { ...teamsConversationKey(channel), ...reference } }));
}

export async function teamsConversation(store: ConversationStore, channelId: string): Promise<ConversationReference | undefined> {
  const out = await store.db.send(new GetCommand({ TableName: store.tableName, Key: teamsConversationKey(channelId) }));
  return out.Item as ConversationReference | undefined;
}

/** The Chat SDK channel id of a stored conversation (what `chat.channel()` posts to). */
export const chatChannelIdOf = (reference: ConversationReference) =>
  encodeThreadId({ conversationId: reference.channelId, serviceUrl: reference.serviceUrl, conversationType: reference.conversationType });

/**
 * The thread a new post in the conversation starts: in a channel, the post is the root of a thread
 * (`;messageid=` the post's id); a group or personal chat is one thread.
 */
export function threadIdOfPost(reference: ConversationReference, postId: string): string {
  if (reference.conversationType !== 'channel') return chatChannelIdOf(reference);
  return encodeThreadId({
    conversationId: `${reference.channelId};messageid=${postId}`,
    serviceUrl: reference.serviceUrl,
    conversationType: 'channel',
  });
}
