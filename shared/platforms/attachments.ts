// Files attached to a prompt: downloaded through the chat adapter (it holds the platform's auth) to
// the thread's attachments/ as {timestamp}_{filename}, named in the prompt by their sandbox path.
// Images also go to the model as image blocks, kept in the context as references to S3 and read
// only when a request is built (context.jsonl stays small).
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { ContentBlock, ImageBlock, ImageFormat, Message } from '@aws-sdk/client-bedrock-runtime';
import type { Attachment } from 'chat';
import { dataKeys } from '../ids.ts';
import type { RunInput } from '../contracts.ts';
import type { StoreDeps } from '../context/store.ts';

/** Bedrock's limits for an image block. */
export const MAX_IMAGE_BYTES = 3_750_000;
const IMAGE_FORMATS: Record<string, ImageFormat> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};
/** Files larger than this are not downloaded (the Lambda holds them in memory). */
export const MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024;

export interface SavedAttachment {
  original: string;
  /** Where the agent finds it in its sandbox. */
  local: string;
  key: string;
  mimeType: string;
  size: number;
}

export interface AttachmentDeps {
  store: StoreDeps;
  /** The chat adapter's way to restore a serialized attachment's download (with the platform's auth). */
  rehydrate(attachment: Attachment): Attachment;
}

export const safeName = (name: string) =>
  name
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^\.+/, '')
    .slice(0, 120) || 'file';

export async function saveAttachments(deps: AttachmentDeps, run: RunInput): Promise<{ saved: SavedAttachment[]; notes: string[] }> {
  const serialized = (run.prompt.thread.currentMessage as { attachments?: Attachment[] } | undefined)?.attachments ?? [];
  const stamp = run.prompt.postedAt.replace(/[^0-9]/g, '').slice(0, 17);
  const saved: SavedAttachment[] = [];
  const notes: string[] = [];
  for (const [index, raw] of serialized.entries()) {
    const name = raw.name ?? `attachment-${index + 1}`;
    if ((raw.size ?? 0) > MAX_ATTACHMENT_BYTES) {
      notes.push(`${name} was not downloaded: ${raw.size} bytes is over the ${MAX_ATTACHMENT_BYTES}-byte limit`);
      continue;
    }
    const attachment = deps.rehydrate(raw);
    if (!attachment.fetchData) {
      notes.push(`${name} could not be downloaded (no download link)`);
      continue;
    }
    let data: Buffer;
    try {
      const fetched = await attachment.fetchData();
      data = Buffer.isBuffer(fetched) ? fetched : Buffer.from(new Uint8Array(fetched));
    } catch (error) {
      notes.push(`${name} could not be downloaded: ${(error as Error).message}`);
      continue;
    }
    const key = `${dataKeys(run.threadId).threadDir}/attachments/${stamp}_${safeName(name)}`;
    const mimeType = raw.mimeType ?? 'application/octet-stream';
    await deps.store.s3.send(new PutObjectCommand({ Bucket: deps.store.bucket, Key: key, Body: data, ContentType: mimeType }));
    saved.push({ original: name, local: `/workspace/data/${key}`, key, mimeType, size: data.length });
  }
  return { saved, notes };
}

/** The prompt's blocks for its attachments: paths for every file, an image block per image. */
export function attachmentBlocks(store: StoreDeps, saved: SavedAttachment[], notes: string[]): ContentBlock[] {
  if (saved.length === 0 && notes.length === 0) return [];
  const lines = [...saved.map((a) => `- ${a.original}: ${a.local} (${a.mimeType}, ${a.size} bytes)`), ...notes.map((n) => `- ${n}`)];
  const blocks: ContentBlock[] = [{ text: `Attached files:\n${lines.join('\n')}` }];
  for (const a of saved) {
    const format = IMAGE_FORMATS[a.mimeType.toLowerCase()];
    if (!format) continue;
    if (a.size > MAX_IMAGE_BYTES) {
      blocks.push({
        text: `(${a.original} is ${a.size} bytes, over the model's ${MAX_IMAGE_BYTES}-byte image limit: not shown to you, but it is at ${a.local})`,
      });
      continue;
    }
    blocks.push({ image: { format, source: { s3Location: { uri: `s3://${store.bucket}/${a.key}` } } } });
  }
  return blocks;
}

/** Image blocks that point at this bucket (in a message, or in a tool result: an MCP tool's) become bytes for the request. */
export async function materializeImages(store: StoreDeps, messages: Message[]): Promise<Message[]> {
  const prefix = `s3://${store.bucket}/`;
  const loadImage = async (image: ImageBlock): Promise<{ image: ImageBlock } | { text: string }> => {
    const uri = image.source?.s3Location?.uri;
    if (!uri?.startsWith(prefix)) return { image };
    try {
      const out = await store.s3.send(new GetObjectCommand({ Bucket: store.bucket, Key: uri.slice(prefix.length) }));
      const bytes = await out.Body!.transformToByteArray();
      return { image: { format: image.format, source: { bytes } } };
    } catch {
      return { text: `(an image is no longer available: ${uri.slice(prefix.length)})` };
    }
  };
  const load = async (block: ContentBlock): Promise<ContentBlock> => {
    if (block.image) return loadImage(block.image);
    const result = block.toolResult;
    if (!result?.content?.some((part) => part.image)) return block;
    const content = await Promise.all(result.content.map(async (part) => (part.image ? loadImage(part.image) : part)));
    return { toolResult: { ...result, content } };
  };
  return Promise.all(messages.map(async (m) => ({ ...m, content: await Promise.all((m.content ?? []).map(load)) })));
}

/** Bedrock's image format for a media type it takes, or undefined. */
export const imageFormatOf = (mimeType: string): ImageFormat | undefined => IMAGE_FORMATS[mimeType.toLowerCase()];
