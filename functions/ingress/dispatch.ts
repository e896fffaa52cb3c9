// The inbox consumer: admit each prompt to its thread's actor (take the lease and start a run, or
// queue behind the running one, or refuse it as busy past the queue depth). Within a message group,
// a failure fails the rest of that group's records in the batch too, so a retry never reorders a
// thread's prompts.
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { SerializedThread } from 'chat';
import { admitPrompt } from '../../shared/actor.ts';
import { clients, requireEnv } from '../../shared/aws.ts';
import { threadFromJSON } from '../../shared/chat.ts';
import { reclaimStaleLease, stopThread, type ControlDeps } from '../../shared/control.ts';
import { actorFromEnv, chatFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { channelKeyOf } from '../../shared/ids.ts';
import { promptSchema, type Prompt, type Settings } from '../../shared/schemas.ts';
import { loadSettings } from '../../shared/store.ts';

const logger = handlerLogger('dispatch');
const actor = actorFromEnv(logger);
const control: ControlDeps = { actor, sfn: clients.sfn(), stateMachineArn: requireEnv('STATE_MACHINE_ARN'), logger };
const loadChat = chatFromEnv(logger);

// settings.json is read at most once a minute per container (SETTINGS_CACHE_SECONDS): queue limits
// need not be instant.
const cacheMs = (Number(process.env.SETTINGS_CACHE_SECONDS ?? 60) || 0) * 1000;
let settings: { value: Settings; at: number } | undefined;
async function currentSettings(): Promise<Settings> {
  if (!settings || Date.now() - settings.at >= cacheMs) {
    const loaded = await loadSettings({ s3: clients.s3(), bucket: requireEnv('DATA_BUCKET') });
    for (const problem of loaded.problems) logger.warn('settings.json ignored', { problem });
    settings = { value: loaded.settings, at: Date.now() };
  }
  return settings.value;
}

async function replyBusy(prompt: Prompt, depth: number): Promise<void> {
  const thread = threadFromJSON(await loadChat(), prompt.thread as SerializedThread);
  const text = `I'm busy in this thread with ${depth} more message${depth === 1 ? '' : 's'} waiting, so I dropped this one. Please send it again once I've caught up.`;
  const ephemeral = await thread.postEphemeral(prompt.author.userId, text, { fallbackToDM: false });
  if (!ephemeral) await thread.post(text);
}

async function admit(prompt: Prompt): Promise<void> {
  const config = await currentSettings();
  const mode = config.channels[channelKeyOf(prompt.threadId)]?.queueMode ?? config.queueMode;
  await reclaimStaleLease(control, prompt.threadId);
  const admission = await admitPrompt(actor, prompt, { maxQueueDepth: config.maxQueueDepth, mode });
  logger.info('prompt admitted', { threadId: prompt.threadId, messageId: prompt.messageId, admission, mode });
  if (admission === 'busy') {
    // Not lost silently: the prompt is in the logs, and its author is told.
    logger.warn('prompt refused: queue full', {
      threadId: prompt.threadId,
      messageId: prompt.messageId,
      user: prompt.author.userId,
      text: prompt.text,
    });
    await replyBusy(prompt, config.maxQueueDepth);
  } else if (admission === 'queued' && mode === 'interrupt') {
    await stopThread(control, prompt.threadId, 'interrupted by a newer message');
  }
}

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  const failedGroups = new Set<string>();
  for (const record of event.Records) {
    const group = record.attributes.MessageGroupId ?? record.messageId;
    if (failedGroups.has(group)) {
      failures.push({ itemIdentifier: record.messageId });
      continue;
    }
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      body = undefined;
    }
    const parsed = promptSchema.safeParse(body);
    if (!parsed.success) {
      // It can never succeed; retrying would only hold the thread's queue. Keep it in the logs.
      logger.error('inbox message rejected', {
        messageId: record.messageId,
        issues: parsed.error.issues,
        body: record.body.slice(0, 2000),
      });
      continue;
    }
    try {
      await admit(parsed.data);
    } catch (error) {
      logger.error('admission failed; will retry', { threadId: parsed.data.threadId, messageId: parsed.data.messageId, error });
      failedGroups.add(group);
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
}
