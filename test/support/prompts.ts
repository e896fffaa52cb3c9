// A prompt as the inbox carries it, for tests that admit prompts without a chat.
import type { Prompt } from '../../shared/contracts.ts';

export function promptFor(threadId: string, messageId: string): Prompt {
  return {
    threadId,
    messageId,
    text: `prompt ${messageId}`,
    author: { userId: 'U1', userName: 'alice' },
    postedAt: new Date(0).toISOString(),
    thread: { _type: 'chat:Thread', id: threadId, adapterName: 'slack', channelId: 'slack:C1', isDM: false },
  };
}
