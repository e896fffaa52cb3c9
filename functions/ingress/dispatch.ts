// The inbox consumer: admit each prompt to its thread's actor (take the lease and start a run, or
// queue behind the running one). Within a message group, a failure fails the rest of that group's
// records in the batch too, so a retry never reorders a thread's prompts.
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { admitPrompt } from '../../shared/actor.ts';
import { actorFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { promptSchema } from '../../shared/schemas.ts';

const logger = handlerLogger('dispatch');
const actor = actorFromEnv(logger);

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
      logger.error('inbox message rejected', { messageId: record.messageId, issues: parsed.error.issues, body: record.body.slice(0, 2000) });
      continue;
    }
    try {
      const admission = await admitPrompt(actor, parsed.data);
      logger.info('prompt admitted', { threadId: parsed.data.threadId, messageId: parsed.data.messageId, admission });
    } catch (error) {
      logger.error('admission failed; will retry', { threadId: parsed.data.threadId, messageId: parsed.data.messageId, error });
      failedGroups.add(group);
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
}
