// upload and search_channel: tools that act on the chat thread, run in the agent-step Lambda.
// Files come from S3, where every sandbox change is synced after each tool call.
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { posix } from 'node:path';
import type { Thread } from 'chat';
import { toS3Key, type WorkspaceLayout } from '../sandbox/workspace.ts';
import { resolveToolPath, WORKSPACE_ROOT, type ToolCall, type ToolOutcome } from './sandbox-tools.ts';
import { ToolError } from './text.ts';
import { isS3NotFound } from '../aws/errors.ts';
import { platformNamed } from '../platforms/platforms.ts';

export interface ChatToolDeps {
  thread: Thread;
  s3: S3Client;
  bucket: string;
  layout: WorkspaceLayout;
  /** Slack accepts files up to 1 GB; keep uploads to what a Lambda can hold comfortably. */
  maxUploadBytes?: number;
  /** How many channel messages search_channel scans at most. */
  maxScan?: number;
}

/** Images by file extension: posted with their media type, which lets a platform show them inline. */
const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
};

async function upload(deps: ChatToolDeps, call: ToolCall): Promise<ToolOutcome> {
  if (typeof call.input.path !== 'string') throw new ToolError('path must be a string');
  const path = resolveToolPath(deps.layout, call.input.path);
  // Only the thread's own files: memory, skills and event files are not this tool's to post.
  const own = [deps.layout.scratchPath, deps.layout.attachmentsPath].some((folder) => path.startsWith(`${folder}/`));
  const key = own ? toS3Key(deps.layout, path) : undefined;
  if (!key) throw new ToolError(`${WORKSPACE_ROOT}/${path} is not in your scratch/ or attachments/ folders; copy it into scratch/ first`);
  let body: Buffer;
  try {
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    body = Buffer.from(await out.Body!.transformToByteArray());
  } catch (error) {
    if (isS3NotFound(error)) throw new ToolError(`no such file: ${WORKSPACE_ROOT}/${path}`);
    throw error;
  }
  const limit = deps.maxUploadBytes ?? 100 * 1024 * 1024;
  if (body.length > limit) throw new ToolError(`${WORKSPACE_ROOT}/${path} is ${body.length} bytes, over the ${limit}-byte upload limit`);
  const comment = typeof call.input.comment === 'string' ? call.input.comment : '';
  const filename = posix.basename(path);
  const mimeType = IMAGE_TYPES[posix.extname(filename).toLowerCase()];
  const problem = platformNamed(deps.thread.adapter.name)?.uploadProblem({ filename, mimeType, bytes: body.length });
  if (problem) throw new ToolError(problem);
  const sent = await deps.thread.post({ markdown: comment, files: [{ data: body, filename, mimeType }] });
  return { status: 'success', text: `uploaded ${filename} (${body.length} bytes) to the thread as message ${sent.id}` };
}

async function searchChannel(deps: ChatToolDeps, call: ToolCall): Promise<ToolOutcome> {
  const query = typeof call.input.query === 'string' ? call.input.query.trim().toLowerCase() : '';
  if (!query) throw new ToolError('query must be a non-empty string');
  const limit = Math.min(Math.max(Number(call.input.limit ?? 20) || 20, 1), 100);
  const found: string[] = [];
  let scanned = 0;
  try {
    for await (const message of deps.thread.channel.messages) {
      if (++scanned > (deps.maxScan ?? 1000)) break;
      if (!message.text.toLowerCase().includes(query)) continue;
      const when = message.metadata?.dateSent?.toISOString() ?? '';
      found.push(`[${when}] ${message.author.userName || message.author.userId}: ${message.text.slice(0, 500)}`);
      if (found.length >= limit) break;
    }
  } catch (error) {
    const problem = platformNamed(deps.thread.adapter.name)?.historyProblem(error as Error);
    if (!problem) throw error;
    throw new ToolError(problem);
  }
  if (found.length === 0)
    return { status: 'success', text: `no messages containing "${query}" in the last ${scanned} messages of this channel` };
  return { status: 'success', text: `${found.length} message(s) (newest first):\n${found.join('\n')}` };
}

export async function runChatTool(deps: ChatToolDeps, call: ToolCall): Promise<ToolOutcome> {
  try {
    if (call.name === 'upload') return await upload(deps, call);
    if (call.name === 'search_channel') return await searchChannel(deps, call);
    return { status: 'error', text: `unknown tool ${call.name}` };
  } catch (error) {
    if (error instanceof ToolError) return { status: 'error', text: error.message };
    // A platform error (rate limit, missing scope) is the model's to know about, not a crashed run.
    return { status: 'error', text: `${call.name} failed: ${(error as Error).message}` };
  }
}
