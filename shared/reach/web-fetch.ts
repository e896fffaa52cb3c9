// web_fetch's work: one page through the guarded fetch, its body read up to maxBytes, HTML turned into
// Markdown (node-html-markdown: maintained, no DOM needed, small), other text as it is; what the
// model sees is clamped like `read` and the run's secret filter is applied by the reach step.
import { NodeHtmlMarkdown } from 'node-html-markdown';
import { MAX_READ_CHARS, ToolError } from '../tools/text.ts';
import type { ToolOutcome } from '../tools/tool.ts';
import type { GuardedFetch } from './guarded-fetch.ts';
import { PAGE_TIMEOUT_MS } from './limits.ts';

const HTML = /^(text\/html|application\/xhtml\+xml)\b/i;
const TEXT = /^(text\/|application\/(json|xml|javascript|x-ndjson|yaml|x-yaml)\b|application\/[\w.+-]+\+(json|xml)\b)/i;

/** The body's first `maxBytes` bytes, and whether there was more. */
async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<{ bytes: Uint8Array; cut: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (!body) return { bytes: new Uint8Array(), cut: false };
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks), cut: false };
    chunks.push(value);
    size += value.length;
    if (size >= maxBytes) {
      await reader.cancel();
      return { bytes: Buffer.concat(chunks).subarray(0, maxBytes), cut: size > maxBytes };
    }
  }
}

function decode(bytes: Uint8Array, contentType: string): string {
  const charset = /charset="?([\w-]+)/i.exec(contentType)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** The page at `url` as text for the model. Refusals and HTTP errors are ToolErrors. */
export async function fetchPage(fetcher: GuardedFetch, url: string, maxBytes: number, signal: AbortSignal): Promise<ToolOutcome> {
  const response = await fetcher(url, {
    headers: { accept: 'text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5', 'user-agent': 'threadwork-web-fetch' },
    signal: AbortSignal.any([signal, AbortSignal.timeout(PAGE_TIMEOUT_MS)]),
  }).catch((error: unknown) => {
    if (error instanceof ToolError) throw error;
    if (signal.aborted) throw error;
    const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${PAGE_TIMEOUT_MS / 1000} s` : (error as Error).message;
    throw new ToolError(`could not fetch ${url}: ${reason}`);
  });
  const contentType = response.headers.get('content-type') ?? '';
  if (!response.ok) {
    await response.body?.cancel();
    throw new ToolError(`${url} answered HTTP ${response.status} ${response.statusText}`.trim());
  }
  if (contentType && !HTML.test(contentType) && !TEXT.test(contentType)) {
    await response.body?.cancel();
    throw new ToolError(`${url} is not text (content-type ${contentType}); web_fetch reads text and HTML pages only`);
  }
  const { bytes, cut } = await readCapped(response.body as ReadableStream<Uint8Array> | null, maxBytes);
  const raw = decode(bytes, contentType);
  const text = HTML.test(contentType) || (!contentType && /^\s*<(!doctype html|html)/i.test(raw)) ? NodeHtmlMarkdown.translate(raw) : raw;
  const notes: string[] = [];
  if (cut) notes.push(`[only the first ${maxBytes} bytes of the page were read (maxBytes)]`);
  let shown = text;
  if (shown.length > MAX_READ_CHARS) {
    notes.push(`[page cut at ${MAX_READ_CHARS.toLocaleString('en-US')} of ${shown.length.toLocaleString('en-US')} characters]`);
    shown = shown.slice(0, MAX_READ_CHARS);
  }
  return { status: 'success', text: [response.finalUrl, '', shown || '(empty page)', ...notes].join('\n') };
}
