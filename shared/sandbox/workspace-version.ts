// A channel's workspace version: a DynamoDB counter that the runtime bumps after each of its writes
// to S3 files a sandbox mirrors but did not write itself (another thread's sandbox saving the
// channel's MEMORY.md, skills or event files; the scheduler's event error files; attachments), so
// sandbox-step lists S3 only when the counter moved since its last listing (or the sandbox is new,
// or a run starts: writes from outside the runtime, an operator's `aws s3 cp`, bump nothing), and
// prepare reads the channel's MEMORY.md and skills again only when it moved since a warm container
// last read them (or they are older than PROMPT_FILES_CACHE_SECONDS: shared/context/prompt-files.ts).
//
// The order is what makes it safe: a writer bumps after its S3 write, and sandbox-step reads the
// counter before it lists. A bump it did not see is then either before its listing (the listing has
// the file) or after it (the next call sees the new count and lists again).
import { TransactGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dataKeys } from '../ids.ts';
import { sandboxKey, workspaceVersionKey } from '../table.ts';
import type { SandboxItem, SandboxStoreDeps } from './lifecycle.ts';

/**
 * Counts a write to a channel's shared files (or a thread's attachments), by the channel's data
 * directory (`dataKeys(threadId).channelDir`); returns the new version.
 */
export async function bumpWorkspaceVersion(deps: SandboxStoreDeps, channelDir: string): Promise<number> {
  const out = await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: workspaceVersionKey(channelDir),
      UpdateExpression: 'ADD version :one',
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.version ?? 0);
}

/** The version on a workspace version item as read (0 before any write was counted). */
export const versionOf = (item: Record<string, unknown> | undefined): number => Number(item?.version ?? 0);

/** The thread's sandbox item and its channel's workspace version, read together (one consistent round trip). */
export async function getSandboxAndVersion(
  deps: SandboxStoreDeps,
  threadId: string,
): Promise<{ item: SandboxItem | undefined; version: number }> {
  const out = await deps.db.send(
    new TransactGetCommand({
      TransactItems: [
        { Get: { TableName: deps.tableName, Key: sandboxKey(threadId) } },
        { Get: { TableName: deps.tableName, Key: workspaceVersionKey(dataKeys(threadId).channelDir) } },
      ],
    }),
  );
  const [sandbox, version] = out.Responses ?? [];
  return { item: sandbox?.Item as SandboxItem | undefined, version: versionOf(version?.Item) };
}
