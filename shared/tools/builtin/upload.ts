// Posts a file of the thread's own folders into the chat thread. It runs in the agent step: files
// come from S3, where every sandbox change is synced after each tool call.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { posix } from 'node:path';
import * as z from 'zod';
import { isS3NotFound } from '../../aws/errors.ts';
import { descriptorNamed } from '../../platforms/descriptors.ts';
import { toS3Key } from '../../sandbox/workspace.ts';
import { pathInput, resolveToolPath, WORKSPACE_ROOT } from '../paths.ts';
import { ToolError } from '../text.ts';
import { defineTool } from '../tool.ts';

/** Slack accepts files up to 1 GB; uploads are kept to what a Lambda holds comfortably. */
const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
/** Images by file extension: posted with their media type, which lets a platform show them inline. */
const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
};

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
    const mimeType = IMAGE_TYPES[posix.extname(filename).toLowerCase()];
    const problem = descriptorNamed(thread.adapter.name)?.uploadProblem({ filename, mimeType, bytes: body.length });
    if (problem) throw new ToolError(problem);
    const sent = await thread.post({ markdown: input.comment ?? '', files: [{ data: body, filename, mimeType }] });
    return { status: 'success', text: `uploaded ${filename} (${body.length} bytes) to the thread as message ${sent.id}` };
  },
});
