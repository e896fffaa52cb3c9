// What a prompt weighs where it waits: a long text goes to the data bucket (shared/admission/prompt-body.ts),
// and a prompt still too heavy to queue is refused with the limit named.
import { MAX_QUEUED_PROMPT_BYTES, queuedPromptBytes } from '../prompt-body.ts';
import { end, next, type Gate } from '../context.ts';

export const storeLongText: Gate = async ({ prompt, runId }, deps) => next({ prompt: await deps.storePromptBody(prompt, runId) });

export const refuseTooLarge: Gate = async ({ prompt, received, thread }, deps) => {
  const bytes = queuedPromptBytes(prompt);
  if (bytes <= MAX_QUEUED_PROMPT_BYTES) return next();
  // Only a message with an extraordinary number of attachments gets here; its text is in the log.
  deps.logger.error('prompt refused: too large to queue', {
    threadId: prompt.threadId,
    messageId: prompt.messageId,
    bytes,
    prompt: received,
  });
  await thread.tell(
    `That message carries too much to queue (${Math.ceil(bytes / 1024)} KB of message data, over the ${MAX_QUEUED_PROMPT_BYTES / 1024} KB limit). Please send fewer attachments per message.`,
  );
  return end('refused');
};
