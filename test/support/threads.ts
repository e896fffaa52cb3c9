// What e2e tests ask of a Slack thread on the local cloud: its id, its runs, its actor item, whether
// it went idle, and how often the model saw a text.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { eventually } from './eventually.ts';
import type { TestStack } from './local-stack.ts';

export const threadOf = (posted: { channel: string; threadTs: string }): string => `slack:${posted.channel}:${posted.threadTs}`;

export function threadProbes(stack: () => TestStack) {
  const runsOf = (threadId: string) =>
    [...stack().cloud.stepFunctions.executions.values()].filter((e) => (e.input as { threadId: string }).threadId === threadId);
  const actor = async (threadId: string) =>
    (
      await documentClient(stack().cloud.clients.dynamodb).send(
        new GetCommand({ TableName: stack().cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' } }),
      )
    ).Item;
  const idle = (threadId: string) => eventually(async () => (await actor(threadId))?.status === 'idle', 30_000, `${threadId} idle`);
  const modelSaw = (text: string) => stack().bedrock.requests.filter((r) => JSON.stringify(r.body.messages).includes(text)).length;
  return { runsOf, actor, idle, modelSaw };
}
