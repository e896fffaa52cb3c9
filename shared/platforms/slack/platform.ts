// Slack as the chat functions use it: they send through the sender adapter (sender.ts), built on the
// Slack package's SDK-free parts; the Slack webhook receives (and answers) with the Chat SDK's full
// Slack adapter (adapter.ts), which only it imports. One workspace, one bot token. Slack takes any
// file the upload tool may post, gives a bot its channels' history, and lets a post open a thread;
// the thread ids the bot gets are the ones it answers in, so no thread is refused.
import type { Adapter, Attachment } from 'chat';
import { postToChannel, type ChannelPoster, type ChatPlatform, type PlatformContext, type PlatformStore } from '../platform.ts';
import { slackDescriptor, type SlackCredentials, type SlackEnv } from './descriptor.ts';
import { SlackSenderAdapter } from './sender.ts';

/** Either Slack adapter: they share thread ids and the name `slack`. */
export type SlackAdapter = Adapter;

/** The adapter every function but the Slack webhook sends with; without SLACK_API_URL, to slack.com. */
export function slackSenderAdapter(credentials: SlackCredentials, context: PlatformContext<SlackEnv>): SlackAdapter {
  return new SlackSenderAdapter({
    botToken: credentials.botToken,
    apiUrl: context.env.SLACK_API_URL,
    logger: context.logger.child('slack'),
  });
}

export const slack = {
  ...slackDescriptor,
  adapter: slackSenderAdapter,
  /**
   * One workspace, one bot token: without the team id the Slack adapter downloads with that token
   * (with it, the full adapter would look up a per-team installation, which a single-workspace app has none of).
   */
  rehydrateAttachment(adapter: Adapter, attachment: Attachment): Attachment {
    const slim = { ...attachment, fetchMetadata: attachment.fetchMetadata?.url ? { url: attachment.fetchMetadata.url } : undefined };
    return adapter.rehydrateAttachment?.(slim) ?? attachment;
  },
  openThread: (chat: ChannelPoster, _store: PlatformStore, channelId: string, text: string) =>
    postToChannel(chat, slackDescriptor.name, channelId, text),
  threadProblem: async (): Promise<string | undefined> => undefined,
  received: async (): Promise<void> => {},
} satisfies ChatPlatform;
