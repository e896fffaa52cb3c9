// Upload to act: a file put under uploads/{adapter}/{channel}/ in the data bucket starts a thread in
// that channel. The bot posts a note naming the file, the file is copied into the thread's
// attachments/ and the agent is asked what `NAME.prompt.txt` beside it says (else the object's
// `prompt` metadata, the channel's `uploadPrompt`, or `uploads.prompt` from settings.json).
// Only operators (with access to the bucket) can put files there: no sandbox syncs uploads/.
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { isS3NotFound } from '../aws/errors.ts';
import type { AttachFiles, Firing } from '../events/fire.ts';
import type { Settings } from '../settings/schema.ts';
import { claimFiring, hash, releaseFiring, settleFiring, type ClaimDeps } from './fire.ts';
import { copyIntoThread, tooLargeNote, type ObjectCopyDeps } from './objects.ts';
import { uploadPartition } from '../table.ts';

export const UPLOADS_PREFIX = 'uploads/';
export const UPLOAD_PROMPT_SUFFIX = '.prompt.txt';
const MAX_SIDECAR_BYTES = 16 * 1024;

export interface UploadDeps extends ObjectCopyDeps, ClaimDeps {
  fire(firing: Firing, attach?: AttachFiles): Promise<unknown>;
  settings(): Promise<Pick<Settings, 'uploads' | 'channels'>>;
}

export type UploadOutcome = 'fired' | 'duplicate' | 'ignored' | 'removed';

/** `uploads/slack/C0123/report.csv` → its channel and file; undefined for anything else. */
export function uploadPlace(key: string): { adapterId: string; channelId: string; name: string } | undefined {
  const match = /^uploads\/([a-z][a-z0-9-]*)\/([^/\s]+)\/(.+)$/.exec(key);
  if (!match || match[3]!.endsWith('/')) return undefined;
  return { adapterId: match[1]!, channelId: match[2]!, name: match[3]! };
}

async function sidecarText(deps: UploadDeps, key: string): Promise<string | undefined> {
  try {
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: `${key}${UPLOAD_PROMPT_SUFFIX}` }));
    if ((out.ContentLength ?? 0) > MAX_SIDECAR_BYTES) return undefined;
    return (await out.Body?.transformToString('utf8'))?.trim() || undefined;
  } catch (error) {
    if (isS3NotFound(error)) return undefined;
    throw error;
  }
}

const kilobytes = (bytes: number) =>
  bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export async function onUpload(deps: UploadDeps, key: string): Promise<UploadOutcome> {
  const place = uploadPlace(key);
  if (!place || key.endsWith(UPLOAD_PROMPT_SUFFIX)) return 'ignored';
  let head;
  try {
    head = await deps.s3.send(new HeadObjectCommand({ Bucket: deps.bucket, Key: key }));
  } catch (error) {
    if (isS3NotFound(error)) return 'removed';
    throw error;
  }
  const part = uploadPartition(place.adapterId, place.channelId);
  const claimKey = hash(`${key}#${head.ETag ?? ''}`);
  const claimed = await claimFiring(deps, part, claimKey);
  if (claimed === 'duplicate') return 'duplicate';
  try {
    const settings = await deps.settings();
    const instruction =
      (await sidecarText(deps, key)) ??
      head.Metadata?.prompt ??
      settings.channels[`${place.adapterId}:${place.channelId}`]?.uploadPrompt ??
      settings.uploads.prompt;
    const size = head.ContentLength ?? 0;
    const source = { bucket: deps.bucket, key, size };
    const maxBytes = settings.uploads.maxMegabytes * 1024 * 1024;
    const note = tooLargeNote(source, maxBytes);
    await deps.fire(
      {
        kind: 'upload',
        origin: key,
        firingId: `upload-${claimKey}`,
        announcement: `📎 ${place.name} (${kilobytes(size)}) was uploaded${note ? ': too large to hand to the agent' : ''}.`,
        text: note ? `${instruction}\n\n${note}` : instruction,
        source: { objectKey: key },
        adapterId: place.adapterId,
        channelId: place.channelId,
      },
      (threadId) => copyIntoThread(deps, source, threadId, maxBytes, `upload ${key}`),
    );
    await settleFiring(deps, part, claimKey, 'fired');
    deps.logger.info('upload fired', { key, bytes: size });
    return 'fired';
  } catch (error) {
    await releaseFiring(deps, part, claimKey);
    throw error;
  }
}
