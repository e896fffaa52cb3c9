// The audit record of a thread's run, as the run-ended function writes it (audit/.../<runId>.json).
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { AuditRecord } from '../../shared/observability/audit.ts';
import { readData } from './data-bucket.ts';
import { eventually } from './eventually.ts';
import type { TestStack } from './local-stack.ts';

/** Waits for the audit record of the (first) run of `threadId`. */
export async function auditRecordOf(stack: TestStack, threadId: string): Promise<AuditRecord> {
  const execution = [...stack.cloud.stepFunctions.executions.values()].find(
    (e) => (e.input as { threadId: string }).threadId === threadId,
  )!;
  const { runId } = execution.input as { runId: string };
  return eventually(
    async () => {
      const out = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: 'audit/' }));
      const key = (out.Contents ?? []).map((o) => o.Key!).find((k) => k.endsWith(`/${runId}.json`));
      return key ? (JSON.parse((await readData(stack, key))!) as AuditRecord) : undefined;
    },
    30_000,
    'the audit record',
  );
}
