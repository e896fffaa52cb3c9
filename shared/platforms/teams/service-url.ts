// Where the bot's Bot Framework token may go. A Teams thread id carries the serviceUrl of its
// conversation's Bot Connector, and every reply, edit, typing indicator and file download sends the
// bot's token there. Anyone who can name a thread (an agent writing an event file, a bus event, a
// trigger) can write a thread id whose serviceUrl is their own server; a token sent there is good
// for an hour, in every conversation of the bot (of every tenant, for a multi-tenant bot). So the
// token goes to a serviceUrl only when it is the one Teams named for that conversation in an
// activity whose token verified (stored by shared/platforms/teams/conversations.ts), or, for a conversation
// no such activity has named yet (a first, proactive message), when it is on one of Microsoft's Bot
// Connector origins (shared/platforms/teams/endpoints.ts; the local cloud configures its stand-in's instead).
import { parseThreadId } from '../../ids.ts';
import type { ConversationReference } from './conversations.ts';
import { decodeTeamsThreadId } from './thread-id.ts';

export interface ServiceUrlTrust {
  /** The stored reference of a conversation, by its channel id (shared/platforms/teams/conversations.ts's `teamsConversation`). */
  reference(channelId: string): Promise<ConversationReference | undefined>;
  /** Origins a conversation without a stored reference may be reached at: Microsoft's Bot Connector origins unless configured. */
  connectorOrigins: readonly string[];
}

export class UntrustedServiceUrlError extends Error {
  override name = 'UntrustedServiceUrlError';
}

/** Two serviceUrls name the same Connector endpoint: case and trailing slashes aside. */
export const sameServiceUrl = (a: string, b: string) => a.replace(/\/+$/, '').toLowerCase() === b.replace(/\/+$/, '').toLowerCase();

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
};

/**
 * Why the bot's token may not go to this thread's serviceUrl; undefined when it may, or when the
 * thread is not a Teams thread (it has none).
 */
export async function serviceUrlProblem(trust: ServiceUrlTrust, threadId: string): Promise<string | undefined> {
  let channel: string;
  let serviceUrl: string;
  try {
    const address = parseThreadId(threadId);
    if (address.adapter !== 'teams') return undefined;
    channel = address.channel;
    ({ serviceUrl } = decodeTeamsThreadId(threadId));
  } catch (error) {
    return `${JSON.stringify(threadId)} is not a thread id (${(error as Error).message})`;
  }
  const stored = await trust.reference(channel);
  if (stored) {
    if (sameServiceUrl(stored.serviceUrl, serviceUrl)) return undefined;
    return (
      `the service URL ${JSON.stringify(serviceUrl)} in the thread id is not the one Teams gave for this conversation ` +
      `(${channel}, at ${stored.serviceUrl}): the bot sends its token only there; use a thread id the bot received there`
    );
  }
  const origin = originOf(serviceUrl);
  if (origin && trust.connectorOrigins.includes(origin)) return undefined;
  return (
    `the service URL ${JSON.stringify(serviceUrl)} in the thread id is not the one Teams gave for this conversation ` +
    `(${channel}: no activity from it has been received yet) nor a Bot Connector service URL (${trust.connectorOrigins.join(', ')}): ` +
    'the bot sends its token to neither'
  );
}

/** Throws UntrustedServiceUrlError unless the bot's token may go to this Teams thread's serviceUrl. */
export async function assertTrustedServiceUrl(trust: ServiceUrlTrust, threadId: string): Promise<void> {
  const problem = await serviceUrlProblem(trust, threadId);
  if (problem) throw new UntrustedServiceUrlError(`Refusing to send the bot's token: ${problem}`);
}

/**
 * Whether the bot's token may go with a download of `url` for a file of this thread: only from the
 * trusted serviceUrl's own origin.
 */
export async function attachmentUrlProblem(trust: ServiceUrlTrust, threadId: string, url: string): Promise<string | undefined> {
  const problem = await serviceUrlProblem(trust, threadId);
  if (problem) return problem;
  const origin = originOf(url);
  const connector = originOf(decodeTeamsThreadId(threadId).serviceUrl);
  if (origin && origin === connector) return undefined;
  return `the file ${JSON.stringify(url)} is not on this conversation's Bot Connector (${connector})`;
}
