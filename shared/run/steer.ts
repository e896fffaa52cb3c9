// Steering between tool calls: the rest of the model's tool calls are skipped (each still gets a
// result with its id, as Bedrock requires), and the user's words enter the context as a user turn.
import { appendToolResult, pendingToolCall } from '../context/tool-calls.ts';
import type { ContextEntry } from '../context/store.ts';

export const STEER_SKIPPED = 'skipped: the user steered the conversation before this tool call ran';

export function applySteer(context: ContextEntry[], texts: string[], meta: ContextEntry['meta']): number {
  let skipped = 0;
  for (let call = pendingToolCall(context); call; call = pendingToolCall(context)) {
    appendToolResult(context, call, { status: 'error', text: STEER_SKIPPED }, meta);
    skipped++;
  }
  // Each text starts with its author's name (set when the steer was accepted).
  context.push({ role: 'user', content: texts.map((text) => ({ text: `(steering while you worked) ${text}` })), meta });
  return skipped;
}
