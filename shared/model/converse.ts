// One model call: Bedrock ConverseStream, text deltas handed out as they arrive, the whole assistant
// message assembled for the context. Throttling is retried here with backoff and full jitter, but
// only before any text has streamed (a retry after that would repeat words in the thread).
import {
  ConverseStreamCommand,
  type BedrockRuntimeClient,
  type ContentBlock,
  type Message,
  type SystemContentBlock,
  type TokenUsage,
  type ToolConfiguration,
} from '@aws-sdk/client-bedrock-runtime';

export interface ModelRequest {
  modelId: string;
  system: SystemContentBlock[];
  messages: Message[];
  maxOutputTokens: number;
  temperature?: number;
  toolConfig?: ToolConfiguration;
}

export interface ModelResult {
  content: ContentBlock[];
  stopReason: string;
  usage: Required<Pick<TokenUsage, 'inputTokens' | 'outputTokens'>> & Pick<TokenUsage, 'cacheReadInputTokens' | 'cacheWriteInputTokens'>;
  attempts: number;
  /** Of the attempts, those Bedrock refused with ThrottlingException. */
  throttles: number;
}

export interface ModelDeps {
  bedrock: BedrockRuntimeClient;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Retry policy for throttling; defaults: 6 attempts, 1 s base, 20 s cap. */
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
}

const RETRYABLE = new Set(['ThrottlingException', 'ServiceUnavailableException', 'ModelNotReadyException', 'InternalServerException']);

export function isRetryableModelError(error: unknown): boolean {
  return error instanceof Error && RETRYABLE.has(error.name);
}

/** Full jitter: a uniformly random wait up to an exponentially growing cap. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** attempt));
}

export async function streamModel(
  deps: ModelDeps,
  request: ModelRequest,
  onText: (delta: string) => void,
  signal?: AbortSignal,
): Promise<ModelResult> {
  const attempts = deps.retry?.attempts ?? 6;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let throttles = 0;
  for (let attempt = 0; ; attempt++) {
    let streamed = false;
    try {
      const result = await streamOnce(
        deps.bedrock,
        request,
        (delta) => {
          streamed = true;
          onText(delta);
        },
        signal,
      );
      return { ...result, attempts: attempt + 1, throttles };
    } catch (error) {
      if (error instanceof Error && error.name === 'ThrottlingException') throttles++;
      if (streamed || !isRetryableModelError(error) || attempt + 1 >= attempts) throw error;
      await sleep(backoffDelay(attempt, deps.retry?.baseDelayMs ?? 1000, deps.retry?.maxDelayMs ?? 20_000, deps.random ?? Math.random));
    }
  }
}

async function streamOnce(
  bedrock: BedrockRuntimeClient,
  request: ModelRequest,
  onText: (delta: string) => void,
  signal?: AbortSignal,
): Promise<Omit<ModelResult, 'attempts' | 'throttles'>> {
  const response = await bedrock.send(
    new ConverseStreamCommand({
      modelId: request.modelId,
      system: request.system,
      messages: request.messages,
      inferenceConfig: { maxTokens: request.maxOutputTokens, temperature: request.temperature },
      toolConfig: request.toolConfig,
    }),
    { abortSignal: signal },
  );
  const blocks: ContentBlock[] = [];
  const toolInputs = new Map<number, string>();
  let stopReason = 'end_turn';
  let usage: ModelResult['usage'] = { inputTokens: 0, outputTokens: 0 };
  for await (const event of response.stream ?? []) {
    if (event.contentBlockStart?.start?.toolUse) {
      const { toolUseId, name } = event.contentBlockStart.start.toolUse;
      blocks[event.contentBlockStart.contentBlockIndex ?? blocks.length] = { toolUse: { toolUseId, name, input: {} } };
    } else if (event.contentBlockDelta) {
      const index = event.contentBlockDelta.contentBlockIndex ?? 0;
      const delta = event.contentBlockDelta.delta;
      if (delta?.text !== undefined) {
        const block = blocks[index];
        blocks[index] = { text: (block && 'text' in block && block.text ? block.text : '') + delta.text };
        if (delta.text) onText(delta.text);
      } else if (delta?.toolUse) {
        toolInputs.set(index, (toolInputs.get(index) ?? '') + (delta.toolUse.input ?? ''));
      }
    } else if (event.messageStop) {
      stopReason = event.messageStop.stopReason ?? stopReason;
    } else if (event.metadata?.usage) {
      const u = event.metadata.usage;
      usage = {
        inputTokens: u.inputTokens ?? 0,
        outputTokens: u.outputTokens ?? 0,
        cacheReadInputTokens: u.cacheReadInputTokens,
        cacheWriteInputTokens: u.cacheWriteInputTokens,
      };
    } else {
      const failure =
        event.throttlingException ??
        event.modelStreamErrorException ??
        event.serviceUnavailableException ??
        event.internalServerException ??
        event.validationException;
      if (failure) throw failure;
    }
  }
  for (const [index, json] of toolInputs) {
    const block = blocks[index];
    if (block && 'toolUse' in block && block.toolUse) block.toolUse.input = json ? JSON.parse(json) : {};
  }
  return { content: blocks.filter((b) => b !== undefined), stopReason, usage };
}

/** Bedrock wants alternating roles; a failed earlier run can leave two user turns in a row. */
export function mergeConsecutiveRoles(messages: Message[]): Message[] {
  const merged: Message[] = [];
  for (const message of messages) {
    const last = merged[merged.length - 1];
    if (last && last.role === message.role) last.content = [...(last.content ?? []), ...(message.content ?? [])];
    else merged.push({ role: message.role, content: [...(message.content ?? [])] });
  }
  return merged;
}

export function textOf(content: ContentBlock[]): string {
  return content.map((b) => ('text' in b && b.text ? b.text : '')).join('');
}
