// The Slack webhook's adapter: the Chat SDK's full Slack adapter in webhook mode, which verifies and
// parses Slack's events and answers them. Only the webhook function imports this module, so the full
// adapter and @slack/web-api (with axios under it) stay out of the other bundles, which send with
// sender.ts.
import { createSlackAdapter } from '@chat-adapter/slack';
import type { Logger } from 'chat';
import type { PlatformContext } from '../platform.ts';
import type { SlackCredentials, SlackEnv } from './descriptor.ts';

export type SlackReceivingAdapter = ReturnType<typeof createSlackAdapter>;

/** The full Slack adapter for these credentials; without `apiUrl`, slack.com's. */
export function slackAdapter(credentials: SlackCredentials, options: { logger: Logger; apiUrl?: string }): SlackReceivingAdapter {
  return createSlackAdapter({
    botToken: credentials.botToken,
    signingSecret: credentials.signingSecret,
    apiUrl: options.apiUrl,
    logger: options.logger.child('slack'),
  });
}

/** The adapter the Slack webhook passes in place of the platform's own. */
export const slackReceivingAdapter = (credentials: SlackCredentials, context: PlatformContext<SlackEnv>): SlackReceivingAdapter =>
  slackAdapter(credentials, { logger: context.logger, apiUrl: context.env.SLACK_API_URL });
