// Slack as the chat functions use it: the Chat SDK's Slack adapter in webhook mode (it both receives
// and sends), for one workspace with one bot token. Slack takes any file the upload tool may post,
// gives a bot its channels' history, and lets a post open a thread; the thread ids the bot gets are
// the ones it answers in, so no thread is refused.
import { createSlackAdapter } from '@chat-adapter/slack';
import type { Adapter, Attachment, Logger } from 'chat';
import { postToChannel, type ChannelPoster, type ChatPlatform, type PlatformContext, type PlatformStore } from '../platform.ts';
import { slackDescriptor, type SlackCredentials, type SlackEnv } from './descriptor.ts';

export type SlackAdapter = ReturnType<typeof createSlackAdapter>;

/** The Slack adapter for these credentials; without `apiUrl`, SLACK_API_URL's, else slack.com's. */
export function slackAdapter(credentials: SlackCredentials, options: { logger: Logger; apiUrl?: string }): SlackAdapter {
  return createSlackAdapter({
    botToken: credentials.botToken,
    signingSecret: credentials.signingSecret,
    apiUrl: options.apiUrl,
    logger: options.logger.child('slack'),
  });
}

export const slack = {
  ...slackDescriptor,
  adapter: (credentials: SlackCredentials, context: PlatformContext<SlackEnv>): SlackAdapter =>
    slackAdapter(credentials, { logger: context.logger, apiUrl: context.env.SLACK_API_URL }),
  /**
   * One workspace, one bot token: without the team id the Slack adapter downloads with that token
   * (with it, it would look up a per-team installation, which a single-workspace app has none of).
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
