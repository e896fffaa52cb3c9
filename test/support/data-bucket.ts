// The local data bucket as an operator sees it: read and write one key (JSON for non-strings).
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { TestStack } from './local-stack.ts';

export async function putData(stack: TestStack, key: string, body: unknown): Promise<void> {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key, Body: typeof body === 'string' ? body : JSON.stringify(body) }),
  );
}

/** The key's text, or undefined when it cannot be read (missing). */
export async function readData(stack: TestStack, key: string): Promise<string | undefined> {
  try {
    const out = await stack.cloud.clients.s3.send(new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key }));
    return await out.Body!.transformToString();
  } catch {
    return undefined;
  }
}
