// An MCP result's images, stored in the data bucket beside the thread: the context keeps references
// (s3://...), as it does for attachments, and the model step shows them.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { StoreDeps } from '../context/store.ts';
import { dataKeys } from '../ids.ts';
import type { ToolImage } from '../tools/tool.ts';
import type { ResultImage } from './mcp-client.ts';

export function storeResultImages(store: StoreDeps, threadId: string, toolUseId: string, images: ResultImage[]): Promise<ToolImage[]> {
  return Promise.all(
    images.map(async ({ format, data }, i) => {
      const key = `${dataKeys(threadId).threadDir}/reach/${toolUseId}-${i + 1}.${format}`;
      await store.s3.send(
        new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: Buffer.from(data, 'base64'), ContentType: `image/${format}` }),
      );
      return { format, uri: `s3://${store.bucket}/${key}` };
    }),
  );
}
