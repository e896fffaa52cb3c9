// The local stack that `npm start` (main.ts) runs: the stack's handlers on local emulators, reachable
// at PORT, talking to a local Slack stand-in (default) or to real Slack when SLACK_BOT_TOKEN is set.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { startLocalCloud } from './cloud.ts';
import { startSlackStandIn } from './slack/index.ts';
import { consoleSources, startConsole } from './console/index.ts';
import { DEFAULT_TENANT_ID, startTeamsStandIn } from './teams/index.ts';
import { startBedrockFake } from './bedrock.ts';
import { demoModel } from './demo-model.ts';
import { localSecretArn } from './resources.ts';
import { liveLocalStack, localStackFile, localStackRecord, removeLocalStack, shownPath, writeLocalStack } from './stack-file.ts';
import { portInUseLine, portsInUse, type WantedPort } from './port-holder.ts';
import { DEFAULT_SETTINGS } from '../../../infra/settings.ts';
import { describeRequestUrls } from '../../../infra/slack-manifest.ts';
import { parseTriggers } from '../../../shared/triggers/declaration.ts';
import { LOCAL_SANDBOX_SETTINGS, type LocalIsolation, type LocalSandboxSetting } from './ecs/isolation.ts';

const env = process.env;

/**
 * MCP_SECRET_<NAME>=value: the secret `<stack>/mcp/<NAME>` in the local Secrets Manager, which a
 * settings.json header names as `${secret:<NAME>}` (as the operator creates it in AWS).
 */
function createMcpSecrets(cloud: Awaited<ReturnType<typeof startLocalCloud>>): string[] {
  return Object.entries(env).flatMap(([key, value]) => {
    const name = /^MCP_SECRET_(.+)$/.exec(key)?.[1];
    if (!name || !value) return [];
    const secretName = `${cloud.deployment.stackName}/mcp/${name}`;
    cloud.secretsManager.create({ arn: localSecretArn(secretName), name: secretName, value });
    return [secretName];
  });
}

/** The triggers declared in cdk.json, which the local stack runs as a deployment would. */
function declaredTriggers(): unknown {
  const cdkJson = JSON.parse(readFileSync(new URL('../../../cdk.json', import.meta.url), 'utf8')) as { context?: { triggers?: unknown } };
  return cdkJson.context?.triggers ?? [];
}

function port(name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    console.error(`${name} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

/** Whether the default AWS credential chain yields credentials (then Bedrock can be real). */
async function haveModelCredentials(): Promise<boolean> {
  const client = new BedrockRuntimeClient({ region: env.AWS_REGION ?? 'us-east-1' });
  try {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 3000).unref());
    const credentials = await Promise.race([client.config.credentials(), timeout]);
    return Boolean(credentials.accessKeyId);
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

function localSandboxSetting(): LocalSandboxSetting {
  const raw = env.LOCAL_SANDBOX || 'isolated';
  if ((LOCAL_SANDBOX_SETTINGS as readonly string[]).includes(raw)) return raw as LocalSandboxSetting;
  console.error(`LOCAL_SANDBOX must be one of ${LOCAL_SANDBOX_SETTINGS.join(', ')}, got ${JSON.stringify(raw)}`);
  process.exit(2);
}

/** The sandbox line of the start-up message; loud when commands are not isolated. */
function sandboxLines(isolation: LocalIsolation): string[] {
  if (isolation.mode === 'bubblewrap') {
    const network = isolation.shareNetwork ? "with this machine's network (LOCAL_SANDBOX=egress)" : 'no network';
    return [`  Sandbox        each task in bubblewrap: its own /workspace, ${network}`];
  }
  const banner = '  ' + '!'.repeat(96);
  if (isolation.mode === 'process') {
    return [
      '',
      banner,
      '  !! LOCAL_SANDBOX=unsafe: sandbox commands run as plain processes of your user. They can read your',
      "  !! home directory and credentials, other threads' files, and reach the network. Use only with",
      '  !! models and prompts you would trust with your own shell.',
      banner,
    ];
  }
  return [
    '',
    banner,
    `  !! The sandbox is unavailable: ${isolation.reason}.`,
    '  !! Tool calls that need the sandbox (bash, read, write, edit) are refused with this message.',
    banner,
  ];
}

const LOCAL_MODELS = ['demo', 'echo', 'bedrock'] as const;
type LocalModel = (typeof LOCAL_MODELS)[number];

/** LOCAL_MODEL, or by default Bedrock when it can be reached and the demo model when not. */
function localModelChoice(credentials: boolean): LocalModel {
  const raw = env.LOCAL_MODEL;
  if (!raw) return credentials || env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME ? 'bedrock' : 'demo';
  if ((LOCAL_MODELS as readonly string[]).includes(raw)) return raw as LocalModel;
  console.error(`LOCAL_MODEL must be one of ${LOCAL_MODELS.join(', ')} (or unset), got ${JSON.stringify(raw)}`);
  process.exit(2);
}

/** The variable that moves a fixed port, by its number (defaults and set values alike). */
function portVariable(taken: number): string | undefined {
  const fixed = {
    PORT: 3000,
    LOCAL_SLACK_PORT: 3001,
    LOCAL_EVENTBRIDGE_PORT: 3002,
    LOCAL_TEAMS_PORT: 3003,
    LOCAL_METRICS_PORT: 3004,
    LOCAL_CONSOLE_PORT: 3005,
  };
  const found = Object.entries(fixed).find(([name, fallback]) => Number(env[name] || fallback) === taken);
  return found?.[0];
}

/** Where --persist keeps the state table: beside the stack file, so each stack of a checkout has its own. */
export const persistedTableDir = (stackFile: string) => `${stackFile.replace(/\.json$/, '')}-state/dynamodb`;

async function main(started: number, options: { persist: boolean }): Promise<void> {
  const loaded = Date.now() - started;
  const realSlack = Boolean(env.SLACK_BOT_TOKEN);
  if (realSlack && !env.SLACK_SIGNING_SECRET) {
    console.error('SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not: set both to talk to a real Slack app.');
    process.exit(2);
  }
  const localSandbox = localSandboxSetting();
  const realTeams = Boolean(env.TEAMS_APP_ID);
  const wanted: Required<WantedPort>[] = [
    { port: port('PORT', 3000), what: 'the webhook API', variable: 'PORT' },
    ...(realSlack ? [] : [{ port: port('LOCAL_SLACK_PORT', 3001), what: 'the Slack stand-in', variable: 'LOCAL_SLACK_PORT' }]),
    { port: port('LOCAL_EVENTBRIDGE_PORT', 3002), what: 'the local EventBridge', variable: 'LOCAL_EVENTBRIDGE_PORT' },
    ...(realTeams ? [] : [{ port: port('LOCAL_TEAMS_PORT', 3003), what: 'the Teams stand-in', variable: 'LOCAL_TEAMS_PORT' }]),
    { port: port('LOCAL_METRICS_PORT', 3004), what: 'the metrics summary', variable: 'LOCAL_METRICS_PORT' },
    ...(realSlack && realTeams ? [] : [{ port: port('LOCAL_CONSOLE_PORT', 3005), what: 'the console', variable: 'LOCAL_CONSOLE_PORT' }]),
  ];
  const wantedPort = (variable: string) => wanted.find((w) => w.variable === variable)?.port;
  // One stack file per stack: a second stack from this checkout needs its own, or the CLIs of the
  // first would reach the second.
  const stackFile = localStackFile();
  const running = await liveLocalStack(stackFile);
  if (running) {
    console.error(
      `A local stack (pid ${running.pid}) is already running from this checkout and owns ${shownPath(stackFile)}: stop it, ` +
        'or start this one with its own LOCAL_STACK_FILE and ports (see npm start -- --help).',
    );
    process.exit(2);
  }
  const taken = await portsInUse(wanted);
  if (taken.length > 0) {
    console.error(taken.join('\n'));
    process.exit(2);
  }
  const signingSecret = env.SLACK_SIGNING_SECRET ?? randomBytes(16).toString('hex');
  const botToken = env.SLACK_BOT_TOKEN ?? `xoxb-local-${randomBytes(8).toString('hex')}`;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const progress = (step: string, ms: number) => console.log(`  ${seconds(Date.now() - started).padStart(7)}  ${step} (${seconds(ms)})`);
  progress("the local cloud's code loaded", loaded);
  let stepStart = Date.now();
  const stepDone = (step: string) => {
    progress(step, Date.now() - stepStart);
    stepStart = Date.now();
  };
  const credentials = await haveModelCredentials();
  stepDone(credentials ? 'AWS credentials found' : 'no AWS credentials found');
  const modelChoice = localModelChoice(credentials);
  const localModel = modelChoice === 'bedrock' ? undefined : await startBedrockFake();
  if (modelChoice === 'echo') {
    // A stand-in that streams back what it was told.
    localModel?.setDefault((request) => {
      const last = JSON.stringify(request.body.messages?.at(-1)?.content ?? '');
      const said = /"text":"((?:[^"\\]|\\.)*)"/.exec(last)?.[1] ?? '';
      return { text: `(local echo model) You said: ${JSON.parse(`"${said}"`)}`.split(/(?<= )/), delayMs: 40 };
    });
  }
  if (modelChoice === 'demo') localModel?.setDefault(demoModel());
  const modelEndpoint = localModel?.endpoint ?? env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME;

  const slack = realSlack ? undefined : await startSlackStandIn({ signingSecret, botToken, port: wantedPort('LOCAL_SLACK_PORT') });
  // Without TEAMS_APP_ID a local Teams stand-in plays the Bot Framework (keys, tokens, Connector API).
  if (realTeams && !env.TEAMS_APP_PASSWORD) {
    console.error('TEAMS_APP_ID is set but TEAMS_APP_PASSWORD is not: set both (and TEAMS_APP_TENANT_ID) to talk to a real Azure Bot.');
    process.exit(2);
  }
  const teamsApp = {
    appId: env.TEAMS_APP_ID ?? randomUUID(),
    appPassword: env.TEAMS_APP_PASSWORD ?? randomBytes(16).toString('hex'),
    tenantId: env.TEAMS_APP_TENANT_ID ?? DEFAULT_TENANT_ID,
  };
  const teams = realTeams ? undefined : await startTeamsStandIn({ ...teamsApp, port: wantedPort('LOCAL_TEAMS_PORT') });
  // Read once: the cloud runs them, and the banner lists them.
  stepDone(
    `the stand-ins: ${[slack && 'Slack', teams && 'Teams', localModel && `the ${modelChoice} model`].filter(Boolean).join(', ') || 'none'}`,
  );
  const triggers = declaredTriggers();
  const dynamoDbPath = options.persist ? persistedTableDir(stackFile) : undefined;
  const cloud = await startLocalCloud({
    ...(dynamoDbPath ? { dynamoDbPath } : {}),
    onStep: progress,
    port: wantedPort('PORT'),
    slack: { signingSecret, botToken, apiUrl: slack?.apiUrl ?? env.SLACK_API_URL },
    teams: {
      ...teamsApp,
      openIdMetadataUrl: teams?.openIdMetadataUrl ?? env.TEAMS_OPENID_METADATA_URL,
      tokenUrl: teams?.tokenUrl ?? env.TEAMS_TOKEN_URL,
      connectorOrigins: teams?.url ?? env.TEAMS_CONNECTOR_ORIGINS,
    },
    modelId: env.BEDROCK_MODEL_ID,
    triggers,
    eventBridgePort: wantedPort('LOCAL_EVENTBRIDGE_PORT'),
    metricsPort: wantedPort('LOCAL_METRICS_PORT'),
    useAmbientCredentials: credentials,
    localSandbox,
    env: { LOG_LEVEL: env.LOG_LEVEL ?? 'warn', ...(modelEndpoint ? { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: modelEndpoint } : {}) },
  });
  slack?.setEventsUrl(cloud.slackEventsUrl);
  teams?.setMessagingEndpoint(cloud.teamsMessagesUrl);
  localModel?.setAuthorizer(cloud.authorizeModelRequest);
  const mcpSecrets = createMcpSecrets(cloud);

  const modelId = env.BEDROCK_MODEL_ID || DEFAULT_SETTINGS.modelId;
  // The console shows the local stand-ins' threads: with a real Slack app and Azure Bot there is none to show.
  const localConsole =
    slack || teams
      ? await startConsole({
          ...consoleSources({ slack, teams }, cloud),
          port: wantedPort('LOCAL_CONSOLE_PORT'),
          ...(dynamoDbPath ? { persisted: `${shownPath(dynamoDbPath)} (the state table only)` } : {}),
        })
      : undefined;
  const lines = [
    `Threadwork local stack is up (${((Date.now() - started) / 1000).toFixed(1)} s).`,
    ...(localConsole
      ? [
          `  Console        ${localConsole.url}  (open it in a browser: Slack and Teams threads, tool calls, approvals, runs, metrics, budgets, audit)`,
        ]
      : []),
    `  Webhook API    ${cloud.apiUrl}  (POST /slack/events, POST /api/messages, GET /health)`,
  ];
  if (slack) {
    lines.push(
      `  Slack          local stand-in at ${slack.url}  (open it in a browser to watch the threads)`,
      `  Talk to it     npm run chat -- "hello"      (it finds this stack in ${shownPath(stackFile)})`,
    );
  } else {
    lines.push(
      `  Slack          ${env.SLACK_API_URL ?? 'https://slack.com/api/'}`,
      `  Slack app      set the manifest's ${describeRequestUrls()} to https://<your tunnel to port ${cloud.apiUrl.split(':').pop()}>/slack/events`,
    );
  }
  if (teams) {
    lines.push(
      `  Teams          local stand-in at ${teams.url}  (open it in a browser to watch the conversations)`,
      `  Talk to it     npm run chat -- --teams "hello"`,
    );
  } else {
    lines.push(
      `  Teams          Azure Bot ${teamsApp.appId}: set its messaging endpoint to https://<your tunnel to port ${cloud.apiUrl.split(':').pop()}>/api/messages`,
    );
  }
  lines.push(
    `  Data bucket    s3://${cloud.names.bucket} at ${cloud.env.AWS_ENDPOINT_URL_S3}  (drop event files under events/, e.g.`,
    `                 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws --endpoint-url ${cloud.env.AWS_ENDPOINT_URL_S3} s3 cp reminder.json s3://${cloud.names.bucket}/events/)`,
    `  Audit records  s3://${cloud.names.bucket}/audit/year=…/month=…/day=…/<run id>.json, one per run (docs/audit.md)`,
  );
  for (const trigger of parseTriggers(triggers)) {
    const source = trigger.source.s3
      ? `new objects in s3://${trigger.source.s3.bucket}/${trigger.source.s3.prefix ?? ''} (put them at ${cloud.env.AWS_ENDPOINT_URL_S3})`
      : `events matching its pattern on the default bus (npm run ops -- put-event FILE)`;
    lines.push(`  Trigger        ${trigger.name}: ${source}`);
  }
  const via = {
    demo: 'the local demo model (LOCAL_MODEL=demo): it runs fenced shell blocks, creates, reads and uploads files, sets reminders',
    echo: 'the local echo model (LOCAL_MODEL=echo)',
    bedrock: modelEndpoint ?? `Amazon Bedrock (${env.AWS_REGION ?? 'us-east-1'})`,
  }[modelChoice];
  lines.push(`  Model          ${modelChoice === 'bedrock' ? modelId : modelChoice} via ${via}`);
  if (mcpSecrets.length) lines.push(`  MCP secrets    ${mcpSecrets.join(', ')}  (from MCP_SECRET_* in the environment)`);
  lines.push(`  Metrics        npm run ops -- metrics      (the functions' EMF metrics, served at ${cloud.metrics.endpoint}/metrics)`);
  lines.push(...sandboxLines(cloud.ecs.isolation));
  if (dynamoDbPath) {
    lines.push(
      `  State          the state table (threads' runs and queues, spending, approvals) is kept in ${shownPath(dynamoDbPath)};`,
      '                 the bucket (context, memory, event files), the queues, the schedules and the stand-ins',
      '                 are in memory: gone when the stack stops (fauxqs keeps no state on disk)',
    );
  } else {
    lines.push(
      `  State          in memory: threads, files and event files are gone when the stack stops (npm start -- --persist keeps the state table)`,
    );
  }
  if (modelChoice === 'demo' && !env.LOCAL_MODEL) {
    lines.push(
      '',
      '  No AWS credentials found, so the agent uses the local demo model. For Amazon Bedrock: export AWS',
      '  credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) with Bedrock access to the',
      '  model, or set AWS_ENDPOINT_URL_BEDROCK_RUNTIME to a Bedrock-compatible endpoint; then restart.',
    );
  } else if (modelChoice === 'bedrock' && !credentials && !modelEndpoint) {
    lines.push(
      '',
      '  LOCAL_MODEL=bedrock but no AWS credentials found: the agent will say in the thread that it cannot',
      '  reach Bedrock. Export AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) with',
      '  Bedrock access to the model, or set AWS_ENDPOINT_URL_BEDROCK_RUNTIME; then restart.',
    );
  }
  lines.push(`  Operate it     npm run ops -- runs | stop THREAD | stop --all | pause | resume`);
  lines.push(`  Stack file     ${shownPath(stackFile)}: where npm run chat, ops and doctor -- --local find this stack`);
  writeLocalStack(
    localStackRecord({
      cloud,
      slack,
      teams,
      ...(localConsole ? { console: localConsole } : {}),
      model: localModel && { endpoint: localModel.endpoint, name: modelChoice },
      startedAt: new Date(started),
    }),
    stackFile,
  );
  console.log(lines.join('\n'));

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log('\nStopping the local stack...');
    removeLocalStack(stackFile);
    await localConsole?.close();
    await cloud.stop();
    await slack?.close();
    await teams?.close();
    await localModel?.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.on('SIGHUP', stop);
  // However the process ends (an uncaught error too), the file goes with it.
  process.on('exit', () => removeLocalStack(stackFile));
}

/** Starts the local stack (`started`: when `npm start` began) and keeps it running until a signal. */
export const runLocalStack = (started: number, options: { persist: boolean } = { persist: false }): Promise<void> =>
  main(started, options).catch((error: unknown) => {
    // A port taken after the check above (a race) is still named with the variable that moves it.
    const { code, port: taken } = error as { code?: string; port?: number };
    if (code === 'EADDRINUSE' && taken) {
      console.error(portInUseLine({ port: taken, what: 'a port of the local stack', variable: portVariable(taken) }));
      process.exit(2);
    }
    console.error(`The local stack could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
