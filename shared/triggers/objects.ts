// A file that wakes the agent (an upload, or an object in a trigger's bucket) is copied into the
// thread's attachments/, where the sandbox sees it like a file posted in the chat. Read and written
// by the function (GetObject + PutObject, each under its own grant), never by the sandbox.
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { safeName } from '../platforms/attachments.ts';
import { dataKeys } from '../ids.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { PromptFile } from '../contracts.ts';

export interface ObjectCopyDeps {
  s3: S3Client;
  /** The data bucket. */
  bucket: string;
  logger: JsonLogger;
  now(): Date;
}

export interface CopySource {
  bucket: string;
  key: string;
  size?: number;
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** A sentence for the prompt when the file is too big to copy; undefined when it fits. */
export function tooLargeNote(source: CopySource, maxBytes: number): string | undefined {
  if (source.size === undefined || source.size <= maxBytes) return undefined;
  return `(The file s3://${source.bucket}/${source.key} is ${megabytes(source.size)}, over the ${megabytes(maxBytes)} limit for files copied to you: it was not copied.)`;
}

export async function copyIntoThread(
  deps: ObjectCopyDeps,
  source: CopySource,
  threadId: string,
  maxBytes: number,
  what: string,
): Promise<PromptFile[]> {
  if (tooLargeNote(source, maxBytes)) return [];
  const out = await deps.s3.send(new GetObjectCommand({ Bucket: source.bucket, Key: source.key }));
  if ((out.ContentLength ?? 0) > maxBytes) {
    // The object grew after its event: still over the limit, so not read.
    (out.Body as { destroy?: () => void } | undefined)?.destroy?.();
    deps.logger.warn('file over the copy limit: not copied', {
      what,
      object: `s3://${source.bucket}/${source.key}`,
      bytes: out.ContentLength,
    });
    return [];
  }
  const body = await out.Body!.transformToByteArray();
  const original = source.key.slice(source.key.lastIndexOf('/') + 1) || 'file';
  const stamp = deps
    .now()
    .toISOString()
    .replace(/[^0-9]/g, '')
    .slice(0, 17);
  const key = `${dataKeys(threadId).threadDir}/attachments/${stamp}_${safeName(original)}`;
  const mimeType = out.ContentType ?? 'application/octet-stream';
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.bucket, Key: key, Body: body, ContentType: mimeType }));
  return [{ original, key, mimeType, size: body.length }];
}
