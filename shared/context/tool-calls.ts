// Tool calls in the context: the model's toolUse blocks, each answered by exactly one toolResult
// with the same id in the user message that follows. One result is added per state machine step.
import type { ContentBlock, Message } from '@aws-sdk/client-bedrock-runtime';
import type { ContextEntry, ToolTime } from './store.ts';
import type { ToolCall, ToolOutcome } from '../tools/tool.ts';

/** The next tool call of the latest model response that has no result yet. */
export function pendingToolCall(context: ContextEntry[]): ToolCall | undefined {
  return pendingToolCalls(context)[0];
}

/** The calls of the last answer that have no result yet, in the answer's order. */
export function pendingToolCalls(context: ContextEntry[]): ToolCall[] {
  const lastAssistant = context.findLastIndex((e) => e.role === 'assistant');
  if (lastAssistant === -1) return [];
  const answered = new Set(
    context.slice(lastAssistant + 1).flatMap((e) => e.content.flatMap((b) => (b.toolResult?.toolUseId ? [b.toolResult.toolUseId] : []))),
  );
  return context[lastAssistant]!.content.flatMap((block) => {
    const use = block.toolUse;
    if (!use?.toolUseId || answered.has(use.toolUseId)) return [];
    return [{ toolUseId: use.toolUseId, name: use.name ?? '', input: (use.input ?? {}) as Record<string, unknown> }];
  });
}

/** Adds a call's result; `ran` says when a call that actually ran started and how long it took. */
export function appendToolResult(
  context: ContextEntry[],
  call: ToolCall,
  outcome: ToolOutcome,
  meta: ContextEntry['meta'],
  ran?: ToolTime,
): void {
  const images = (outcome.images ?? []).map(({ format, uri }) => ({ image: { format, source: { s3Location: { uri } } } }));
  const block: ContentBlock = {
    toolResult: { toolUseId: call.toolUseId, content: [{ text: outcome.text }, ...images], status: outcome.status },
  };
  const last = context[context.length - 1];
  const entry = last?.role === 'user' && last.content.every((b) => b.toolResult) ? last : undefined;
  if (entry) entry.content.push(block);
  else context.push({ role: 'user', content: [block], meta: { ...meta } });
  if (ran) {
    const target = entry ?? context[context.length - 1]!;
    target.meta.toolTimes = { ...target.meta.toolTimes, [call.toolUseId]: ran };
  }
}

/** How long a call that started at `startedMs` has run, as a context entry records it. */
export function toolTime(startedMs: number, nowMs: number): ToolTime {
  return { startedAt: new Date(startedMs).toISOString(), durationMs: Math.max(0, nowMs - startedMs) };
}

/**
 * Bedrock rejects a toolUse without its toolResult. A run that ended between the two (a crash, a
 * stop) leaves one behind: answer it with an error result so the next request is valid.
 */
export function repairToolPairs(messages: Message[]): Message[] {
  const repaired: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    repaired.push(message);
    if (message.role !== 'assistant') continue;
    const uses = (message.content ?? []).flatMap((b) => (b.toolUse?.toolUseId ? [b.toolUse.toolUseId] : []));
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(
      (next?.role === 'user' ? (next.content ?? []) : []).flatMap((b) => (b.toolResult?.toolUseId ? [b.toolResult.toolUseId] : [])),
    );
    const missing: ContentBlock[] = uses
      .filter((id) => !answered.has(id))
      .map((id) => ({
        toolResult: { toolUseId: id, content: [{ text: 'not run: the run ended before this tool call' }], status: 'error' },
      }));
    if (missing.length === 0) continue;
    if (next?.role === 'user') {
      messages[i + 1] = { role: 'user', content: [...missing, ...(next.content ?? [])] };
    } else {
      repaired.push({ role: 'user', content: missing });
    }
  }
  return repaired;
}
