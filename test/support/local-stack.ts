// The whole local cloud for end-to-end tests: the stack's handlers on the emulators, with the
// protocol-level Bedrock fake as the model, and the Slack and Teams stand-ins as the workspaces.
import { startLocalCloud, type LocalCloud, type LocalCloudOptions } from '../../packages/local-cloud/src/cloud.ts';
import type { SchedulerClock } from '../../packages/local-cloud/src/scheduler/index.ts';
import { startSlackStandIn, type SlackStandIn } from '../../packages/local-cloud/src/slack/index.ts';
import { startBedrockFake, type BedrockFake } from '../../packages/local-cloud/src/bedrock.ts';
import { startTeamsStandIn, type TeamsStandIn } from '../../packages/local-cloud/src/teams/index.ts';
import { localStackRecord, writeLocalStack } from '../../packages/local-cloud/src/stack-file.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SIGNING_SECRET = 'test-signing-secret';
export const BOT_TOKEN = 'xoxb-test-token';
export const TEAMS_APP_ID = '11111111-2222-3333-4444-555555555555';
export const TEAMS_APP_PASSWORD = 'test-teams-app-password';
/** The tenant of the recorded Teams payloads. */
export const TEAMS_TENANT_ID = 'a1b2c3d4-e5f6-7890-abcd-ef1234567890';

export interface TestStack {
  cloud: LocalCloud;
  slack: SlackStandIn;
  teams: TeamsStandIn;
  bedrock: BedrockFake;
  errors: { where: string; error: unknown }[];
  stop(): Promise<void>;
}

export async function startTestStack(
  options: {
    botUserId?: string;
    /** Serve Teams too (the functions then load the Teams adapter; Slack-only tests start faster). */
    teams?: boolean;
    env?: Record<string, string>;
    clock?: SchedulerClock;
    transformTemplate?: LocalCloudOptions['transformTemplate'];
    /** Declared triggers, as `triggers` in cdk.json. */
    triggers?: unknown;
    localSandbox?: LocalCloudOptions['localSandbox'];
    sandboxNetwork?: LocalCloudOptions['sandboxNetwork'];
    /** web_fetch and channel MCP servers may reach 127.0.0.1 (the deployment setting for local tests only). */
    reachAllowLoopback?: boolean;
    /** The hookFunctions deployment setting, and the operator functions (by ARN) outside the stack that a lambda hook calls. */
    hookFunctions?: string[];
    operatorFunctions?: LocalCloudOptions['operatorFunctions'];
    bubblewrap?: LocalCloudOptions['bubblewrap'];
    /** The chatPlatforms setting (default Slack, and Teams with `teams`). */
    chatPlatforms?: LocalCloudOptions['chatPlatforms'];
    alarmEmail?: string;
    /** The functions' log lines (LOG_LEVEL in `env` decides which are written); default: printed. */
    onLog?: LocalCloudOptions['onLog'];
    /** Each step of the start as it finishes (what `npm start` prints). */
    onStep?: LocalCloudOptions['onStep'];
  } = {},
): Promise<TestStack> {
  const [slack, teams, bedrock] = await Promise.all([
    startSlackStandIn({ signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN, botUserId: options.botUserId }),
    startTeamsStandIn({ appId: TEAMS_APP_ID, appPassword: TEAMS_APP_PASSWORD, tenantId: TEAMS_TENANT_ID }),
    startBedrockFake(),
  ]);
  const errors: TestStack['errors'] = [];
  const cloud = await startLocalCloud({
    slack: { signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN, apiUrl: slack.apiUrl },
    teams:
      options.teams || options.chatPlatforms?.includes('teams')
        ? {
            appId: TEAMS_APP_ID,
            appPassword: TEAMS_APP_PASSWORD,
            tenantId: TEAMS_TENANT_ID,
            openIdMetadataUrl: teams.openIdMetadataUrl,
            tokenUrl: teams.tokenUrl,
            connectorOrigins: teams.url,
          }
        : undefined,
    retryIntervalMs: 20,
    clock: options.clock,
    visibilityTimeoutSeconds: 2,
    env: {
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.endpoint,
      BEDROCK_RETRY_BASE_MS: '10',
      SETTINGS_CACHE_SECONDS: '0',
      // Tests write memory and skills straight to S3 between runs and expect the next run to see them.
      PROMPT_FILES_CACHE_SECONDS: '0',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      ...options.env,
    },
    transformTemplate: options.transformTemplate,
    triggers: options.triggers,
    localSandbox: options.localSandbox,
    sandboxNetwork: options.sandboxNetwork,
    reachAllowLoopback: options.reachAllowLoopback,
    hookFunctions: options.hookFunctions,
    operatorFunctions: options.operatorFunctions,
    bubblewrap: options.bubblewrap,
    chatPlatforms: options.chatPlatforms,
    alarmEmail: options.alarmEmail,
    onError: (where, error) => errors.push({ where, error }),
    onLog: options.onLog,
    onStep: options.onStep,
  });
  slack.setEventsUrl(cloud.slackEventsUrl);
  teams.setMessagingEndpoint(cloud.teamsMessagesUrl);
  bedrock.setAuthorizer(cloud.authorizeModelRequest);
  return {
    cloud,
    slack,
    teams,
    bedrock,
    errors,
    async stop() {
      await cloud.stop();
      await Promise.allSettled([slack.close(), teams.close(), bedrock.close()]);
    },
  };
}

/**
 * The stack file `npm start` would write for this stack (its model: the Bedrock fake), in a folder
 * of its own that goes when the test ends: LOCAL_STACK_FILE=<it> points a CLI at this stack.
 */
export function writeStackFile(stack: TestStack, t: { after(fn: () => void): void }, modelName = 'scripted'): string {
  const dir = mkdtempSync(join(tmpdir(), 'stack-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'stack.json');
  const model = { endpoint: stack.bedrock.endpoint, name: modelName };
  writeLocalStack(localStackRecord({ cloud: stack.cloud, slack: stack.slack, teams: stack.teams, model, startedAt: new Date() }), file);
  return file;
}
