// Before a model call: past the threshold, older messages are summarised by the model (tool pairs
// kept together, the recent part verbatim), the full context first archived in S3 for good. If the
// summary fails, the older part is dropped with a notice instead: a thread never gets stuck.
import { bedrockSummarizer, compactContext, estimateTokens, needsCompaction } from '../../context/compaction.ts';
import { archiveKey, contextIdOf } from '../../context/store.ts';
import type { RunInput } from '../../contracts.ts';
import { type LoadedContext, saveLoadedContext, writeText } from '../../context/store.ts';
import type { AgentDeps } from './deps.ts';
import type { RunSnapshot } from './snapshot.ts';

export async function compactIfNeeded(
  deps: Pick<AgentDeps, 'store' | 'model' | 'logger' | 'now' | 'tools'>,
  run: RunInput,
  snapshot: RunSnapshot,
  context: LoadedContext,
): Promise<void> {
  const settings = snapshot.compaction;
  if (!settings) return;
  const fixed = estimateTokens(JSON.stringify(snapshot.system)) + estimateTokens(JSON.stringify(deps.tools.toolConfig(false)));
  if (!needsCompaction(context.entries, settings, fixed)) return;
  const at = new Date(deps.now()).toISOString();
  const archive = archiveKey(run.threadId, at);
  await writeText(deps.store, archive, `${context.entries.map((e) => JSON.stringify(e)).join('\n')}\n`, 'application/x-ndjson');
  const summarize = bedrockSummarizer({ bedrock: deps.model.bedrock, modelId: snapshot.modelId });
  const out = await compactContext({ summarize }, context.entries, settings, { runId: run.runId, at });
  if (!out.compacted) return;
  const previous = context.entries.find((e) => typeof e.meta.compactions === 'number')?.meta.compactions ?? 0;
  const head = out.entries[0];
  if (head) head.meta = { ...head.meta, compactions: previous + 1 };
  context.entries = out.entries;
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  deps.logger[out.fallback ? 'warn' : 'info']('context compacted', {
    runId: run.runId,
    compactions: previous + 1,
    removedEntries: out.removedEntries,
    tokensBefore: out.tokensBefore,
    tokensAfter: out.tokensAfter,
    archive,
    ...(out.fallback ? { fallback: out.fallback, error: out.error } : {}),
  });
}
