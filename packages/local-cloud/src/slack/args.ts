// Reading Web API arguments as Slack does: form fields arrive as strings, JSON bodies as values.
import type { StoredMessage } from './state.ts';

export type Args = Record<string, unknown>;
export type Result = Record<string, unknown>;
export type WebApiMethod = (args: Args) => Result;

export const str = (args: Args, key: string): string | undefined => {
  const value = args[key];
  return typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;
};

export const num = (args: Args, key: string, fallback: number): number => {
  const n = Number(args[key]);
  return Number.isFinite(n) && args[key] !== undefined && args[key] !== '' ? n : fallback;
};

const bool = (args: Args, key: string): boolean => args[key] === true || args[key] === 'true' || args[key] === '1' || args[key] === 1;

export const fail = (error: string): Result => ({ ok: false, error });

export const encodeCursor = (ts: string): string => Buffer.from(`next_ts:${ts}`).toString('base64');

export const decodeCursor = (cursor: string | undefined): string | undefined => {
  if (!cursor) return undefined;
  const decoded = Buffer.from(cursor, 'base64').toString('utf8');
  return decoded.startsWith('next_ts:') ? decoded.slice('next_ts:'.length) : undefined;
};

/** The oldest / latest / inclusive ts range of conversations.history and conversations.replies. */
export function inRange(args: Args): (m: StoredMessage) => boolean {
  const oldest = Number(str(args, 'oldest') ?? '0');
  const latest = Number(str(args, 'latest') ?? 'Infinity');
  const inclusive = bool(args, 'inclusive');
  return (m) => {
    const t = Number(m.ts);
    return inclusive ? t >= oldest && t <= latest : t > oldest && t < latest;
  };
}

/** Text from the markdown_text chunks of a streaming call. */
export function chunkText(chunks: unknown[]): string {
  return chunks
    .map((c) => (c && typeof c === 'object' && (c as Args).type === 'markdown_text' ? String((c as Args).text ?? '') : ''))
    .join('');
}

/** The content fields of chat.postMessage / chat.update / chat.postEphemeral. */
export function contentOf(args: Args): { text: string; blocks?: unknown[]; attachments?: unknown[] } | undefined {
  const text = str(args, 'markdown_text') ?? str(args, 'text');
  const blocks = Array.isArray(args.blocks) ? args.blocks : undefined;
  const attachments = Array.isArray(args.attachments) ? args.attachments : undefined;
  if (text === undefined && !blocks && !attachments) return undefined;
  return { text: text ?? '', ...(blocks ? { blocks } : {}), ...(attachments ? { attachments } : {}) };
}
