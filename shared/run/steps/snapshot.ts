// What prepare decides once per run, so every step of the run uses the same prompt and model.
import type { SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { dataKeys } from '../../ids.ts';
import type { RunInput, Settings } from '../../schemas.ts';
import { readText, type StoreDeps, writeText } from '../../context/store.ts';
import type { ToolPolicy } from '../../tools/allowed-tools.ts';
import type { Price } from '../../model/pricing.ts';
import type { Budget } from '../../policy/budgets.ts';

export interface RunSnapshot {
  modelId: string;
  maxOutputTokens: number;
  temperature?: number;
  maxModelSteps: number;
  maxToolCallsPerTurn: number;
  maxRunMinutes: number;
  /** Epoch milliseconds when the run was prepared: maxRunMinutes counts from here. */
  startedAt: number;
  /** cachePoint blocks after the stable system prompt, the tools, and the history. */
  promptCaching: boolean;
  /** The model's price (settings.json `prices`, else the built-in list); absent: tokens are counted, not priced. */
  price?: Price;
  showCost?: boolean;
  /** settings.json `budgets` as the run began. */
  budgets?: Budget[];
  compaction?: Settings['compaction'];
  /** The offered skills' `allowed-tools`, when they limit the run's tools. */
  toolPolicy?: ToolPolicy;
  system: SystemContentBlock[];
  /** settings.json `secretPatterns` as the run began: its replies and log are redacted with them too. */
  secretPatterns?: Settings['secretPatterns'];
}

const snapshotKey = (run: RunInput) => `${dataKeys(run.threadId).threadDir}/runs/${run.runId}.json`;

export async function saveSnapshot(store: StoreDeps, run: RunInput, snapshot: RunSnapshot): Promise<void> {
  await writeText(store, snapshotKey(run), JSON.stringify(snapshot), 'application/json');
}

export async function loadSnapshot(store: StoreDeps, run: RunInput): Promise<RunSnapshot> {
  const raw = await readText(store, snapshotKey(run));
  if (!raw) throw new Error(`Run snapshot missing for ${run.runId}: prepare did not complete`);
  return JSON.parse(raw) as RunSnapshot;
}
