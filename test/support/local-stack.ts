// The whole local cloud for end-to-end tests: the stack's handlers on the emulators, with the
// protocol-level Bedrock fake as the model and the Slack stand-in as the workspace.
import { startLocalCloud, type LocalCloud, type LocalCloudOptions } from '../../infra/local/cloud.ts';
import type { SchedulerClock } from '../../infra/local/scheduler/index.ts';
import { startSlackStandIn, type SlackStandIn } from '../../infra/local/slack/index.ts';
import { startBedrockFake, type BedrockFake } from '../../infra/local/bedrock.ts';

export const SIGNING_SECRET = 'test-signing-secret';
export const BOT_TOKEN = 'xoxb-test-token';

export interface TestStack {
  cloud: LocalCloud;
  slack: SlackStandIn;
  bedrock: BedrockFake;
  errors: { where: string; error: unknown }[];
  stop(): Promise<void>;
}

export async function startTestStack(
  options: {
    botUserId?: string;
    env?: Record<string, string>;
    clock?: SchedulerClock;
    transformTemplate?: LocalCloudOptions['transformTemplate'];
    localSandbox?: LocalCloudOptions['localSandbox'];
    bubblewrap?: LocalCloudOptions['bubblewrap'];
  } = {},
): Promise<TestStack> {
  const [slack, bedrock] = await Promise.all([
    startSlackStandIn({ signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN, botUserId: options.botUserId }),
    startBedrockFake(),
  ]);
  const errors: TestStack['errors'] = [];
  const cloud = await startLocalCloud({
    slack: { signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN, apiUrl: slack.apiUrl },
    retryIntervalMs: 20,
    clock: options.clock,
    visibilityTimeoutSeconds: 2,
    env: {
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.endpoint,
      BEDROCK_RETRY_BASE_MS: '10',
      SETTINGS_CACHE_SECONDS: '0',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      ...options.env,
    },
    transformTemplate: options.transformTemplate,
    localSandbox: options.localSandbox,
    bubblewrap: options.bubblewrap,
    onError: (where, error) => errors.push({ where, error }),
  });
  slack.setEventsUrl(cloud.slackEventsUrl);
  bedrock.setAuthorizer(cloud.authorizeModelRequest);
  return {
    cloud,
    slack,
    bedrock,
    errors,
    async stop() {
      await cloud.stop();
      await Promise.allSettled([slack.close(), bedrock.close()]);
    },
  };
}
