// Posts a file of the thread's own folders into the chat thread. It runs in the agent step: files
// come from S3, where every sandbox change is synced after each tool call.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { posix } from 'node:path';
import * as z from 'zod';
import { isS3NotFound } from '../../aws/errors.ts';
import { toS3Key } from '../../sandbox/workspace.ts';
import { pathInput, resolveToolPath, WORKSPACE_ROOT } from '../paths.ts';
import { ToolError } from '../text.ts';
import { defineTool } from '../tool.ts';

/** Slack accepts files up to 1 GB; uploads are kept to what a Lambda holds comfortably. */
const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
/** The images Teams shows inline in a bot's message, by file extension. */
const TEAMS_INLINE_IMAGES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
};
/** An inline image travels base64-encoded inside the activity, whose size the Bot Connector limits. */
export const TEAMS_MAX_IMAGE_BYTES = 1024 * 1024;

export const upload = defineTool({
  name: 'upload',
  runsIn: 'agent',
  description: 'Post a file from your workspace into this chat thread, with an optional comment.',
  input: z.object({
    path: pathInput,
    comment: z.string().describe('Text posted with the file').optional(),
  }),
  async run(input, { thread, s3, bucket, layout }) {
    const path = resolveToolPath(layout, input.path);
    // Only the thread's own files: memory, skills and event files are not this tool's to post.
    const own = [layout.scratchPath, layout.attachmentsPath].some((folder) => path.startsWith(`${folder}/`));
    const key = own ? toS3Key(layout, path) : undefined;
    if (!key) throw new ToolError(`${WORKSPACE_ROOT}/${path} is not in your scratch/ or attachments/ folders; copy it into scratch/ first`);
    let body: Buffer;
    try {
      const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      body = Buffer.from(await out.Body!.transformToByteArray());
    } catch (error) {
      if (isS3NotFound(error)) throw new ToolError(`no such file: ${WORKSPACE_ROOT}/${path}`);
      throw error;
    }
    if (body.length > MAX_UPLOAD_BYTES) {
      throw new ToolError(`${WORKSPACE_ROOT}/${path} is ${body.length} bytes, over the ${MAX_UPLOAD_BYTES}-byte upload limit`);
    }
    const filename = posix.basename(path);
    const mimeType = TEAMS_INLINE_IMAGES[posix.extname(filename).toLowerCase()];
    if (thread.adapter.name === 'teams') {
      // A bot can show an image inline in Teams; any other file needs SharePoint or OneDrive, which this deployment does not use.
      if (!mimeType) {
        throw new ToolError(
          `${filename} cannot be delivered to Teams: a bot can post only PNG, JPEG or GIF images into a Teams conversation (inline). Put the content in your reply instead (text, a table or a code block), or make an image of it.`,
        );
      }
      if (body.length > TEAMS_MAX_IMAGE_BYTES) {
        throw new ToolError(
          `${filename} is ${body.length} bytes; an image posted into Teams may be at most ${TEAMS_MAX_IMAGE_BYTES} bytes`,
        );
      }
    }
    const sent = await thread.post({ markdown: input.comment ?? '', files: [{ data: body, filename, mimeType }] });
    return { status: 'success', text: `uploaded ${filename} (${body.length} bytes) to the thread as message ${sent.id}` };
  },
});
