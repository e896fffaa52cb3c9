// A long prompt's text lives in the data bucket, not in what carries the prompt around: the thread's
// actor item holds every queued prompt (DynamoDB's 400 KB item limit) and every execution's input
// and state hold the running one (Step Functions' 256 KB). So whatever people paste, those stay a
// few KB per prompt; the steps that need the words read them back with promptText.
import { ROOT_KEYS } from '../ids.ts';
import { type Prompt, utf8Bytes } from '../contracts.ts';
import { readText, type StoreDeps, writeText } from '../context/store.ts';

/** Texts longer than this (UTF-8 bytes) are stored in the bucket. */
export const INLINE_PROMPT_BYTES = 4 * 1024;
/** What stays inline of a stored text, for logs and replies that quote it. */
const PREVIEW_CODE_POINTS = 500;
/**
 * The most one prompt may weigh where it waits (JSON, UTF-8 bytes): with at most 20 queued behind
 * the running one, the actor item stays under 300 KB.
 */
export const MAX_QUEUED_PROMPT_BYTES = 12 * 1024;

export const promptBodyKey = (runId: string): string => `${ROOT_KEYS.prompts}${runId}.txt`;

/** The prompt as it may wait and run: a long text moved to the bucket, under the run's key. */
export async function storePromptBody(store: StoreDeps, prompt: Prompt, runId: string): Promise<Prompt> {
  if (prompt.textKey || utf8Bytes(prompt.text) <= INLINE_PROMPT_BYTES) return prompt;
  const key = promptBodyKey(runId);
  // Idempotent: a redelivered prompt writes the same bytes to the same key.
  await writeText(store, key, prompt.text);
  // Cut by code points, so no surrogate pair is split (DynamoDB and S3 want valid UTF-8).
  return { ...prompt, text: [...prompt.text].slice(0, PREVIEW_CODE_POINTS).join(''), textKey: key };
}

/** The prompt's whole text. */
export async function promptText(store: StoreDeps, prompt: Prompt): Promise<string> {
  if (!prompt.textKey) return prompt.text;
  const text = await readText(store, prompt.textKey);
  if (text === undefined) throw new Error(`The text of message ${prompt.messageId} is missing from the data bucket (${prompt.textKey})`);
  return text;
}

export const queuedPromptBytes = (prompt: Prompt): number => utf8Bytes(JSON.stringify(prompt));
