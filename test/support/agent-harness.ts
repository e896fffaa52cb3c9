// The agent's steps with real parts behind every seam: DynamoDB Local for the actor and the ledger,
// an S3 that enforces conditional writes (test/support/conditional-s3.ts) for the data tree, the
// protocol-level Bedrock fake for the model, and the Chat SDK's Slack adapter posting to the Slack
// stand-in. The clock is a number the test moves; starting a run's execution is recorded (the
// state machine is not part of a step's unit).
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { SerializedThread } from 'chat';
import { startBedrockFake, type BedrockFake } from '../../packages/local-cloud/src/bedrock.ts';
import { startSlackStandIn, type SlackStandIn } from '../../packages/local-cloud/src/slack/index.ts';
import { admitPrompt } from '../../shared/run/actor.ts';
import { createStepChat } from '../../shared/platforms/chat.ts';
import { SlackSenderAdapter } from '../../shared/platforms/slack/sender.ts';
import { runIdFor } from '../../shared/ids.ts';
import { createLogger } from '../../shared/observability/log.ts';
import type { Prompt, RunInput } from '../../shared/contracts.ts';
import type { AgentDeps } from '../../shared/run/steps/deps.ts';
import { settingsSource } from '../../shared/settings/source.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { conditionalS3 } from './conditional-s3.ts';
import { startTestTable, type TestTable } from './dynamo.ts';

const BOT_TOKEN = 'xoxb-steps-test';

export interface StepHarness {
  deps: AgentDeps;
  table: TestTable;
  s3: ReturnType<typeof conditionalS3>;
  bedrock: BedrockFake;
  slack: SlackStandIn;
  clock: { ms: number };
  /** Runs whose execution a step started (hand-over, next queued prompt). */
  started: RunInput[];
  /** JSON log lines the steps wrote. */
  logs: Record<string, unknown>[];
  /** A user's message in a new thread (or `threadTs`), admitted so that its run holds the thread. */
  newRun(text: string, options?: { threadTs?: string; heartbeat?: boolean }): Promise<RunInput>;
  /** What the bot has in the run's thread now. */
  botMessages(run: RunInput): { ts: string; text: string; blocks?: unknown[] }[];
  writeObject(key: string, body: string): Promise<void>;
  close(): Promise<void>;
}

export async function startStepHarness(): Promise<StepHarness> {
  const [table, bedrock, slack] = await Promise.all([
    startTestTable('steps-test'),
    startBedrockFake(),
    startSlackStandIn({ signingSecret: 'steps-secret', botToken: BOT_TOKEN }),
  ]);
  const s3 = conditionalS3();
  const clock = { ms: Date.UTC(2026, 10, 24, 9, 0, 0) };
  const started: RunInput[] = [];
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line)) });
  const chatLogger = createLogger({ level: 'silent' });
  const chat = createStepChat({
    // The steps send with the sender adapter, as the agent-step function does.
    adapters: { slack: new SlackSenderAdapter({ botToken: BOT_TOKEN, apiUrl: slack.apiUrl, logger: chatLogger }) },
    db: table.db,
    tableName: table.tableName,
    logger: chatLogger,
    streamUpdateIntervalMs: 250,
  });
  const bedrockClient = new BedrockRuntimeClient({
    endpoint: bedrock.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const store = { s3: s3.client, bucket: 'bucket' };
  const deps: AgentDeps = {
    store,
    settings: settingsSource(store, { maxAgeMs: 0, logger }),
    actor: { db: table.db, tableName: table.tableName, startRun: async (run) => void started.push(run), now: () => clock.ms },
    ledger: { db: table.db, tableName: table.tableName, now: () => clock.ms },
    model: { bedrock: bedrockClient, retry: { attempts: 2, baseDelayMs: 1 } },
    defaultModelId: 'test-default-model',
    tools: BUILTIN_TOOLS,
    thread: (run) => chat.thread(run.prompt.thread as SerializedThread),
    logger,
    now: () => clock.ms,
  };
  return {
    deps,
    table,
    s3,
    bedrock,
    slack,
    clock,
    started,
    logs,
    async newRun(text, options = {}) {
      const posted = await slack.postUserMessage({ text, threadTs: options.threadTs, events: [] });
      const threadId = `slack:${posted.channel}:${posted.threadTs}`;
      const prompt: Prompt = {
        threadId,
        messageId: posted.ts,
        text,
        author: { userId: 'U0LOCALUSER', userName: 'dana' },
        postedAt: new Date(clock.ms).toISOString(),
        thread: { _type: 'chat:Thread', id: threadId, adapterName: 'slack', channelId: posted.channel, isDM: false },
        ...(options.heartbeat ? { heartbeat: true } : {}),
      };
      const admission = await admitPrompt(deps.actor, prompt);
      if (admission !== 'started') throw new Error(`the test's prompt was ${admission}, not started`);
      started.length = 0;
      return { runId: runIdFor(threadId, posted.ts), threadId, prompt };
    },
    botMessages(run) {
      const [, channel, ts] = run.threadId.split(':');
      return slack.messages
        .thread(channel!, ts!)
        .filter((m) => m.bot_id && !m.local.deleted)
        .map((m) => ({ ts: m.ts, text: m.text, blocks: m.blocks }));
    },
    async writeObject(key, body) {
      await s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: key, Body: body }));
    },
    async close() {
      bedrockClient.destroy();
      s3.client.destroy();
      table.raw.destroy();
      await Promise.allSettled([table.emulator.stop(), bedrock.close(), slack.close()]);
    },
  };
}
