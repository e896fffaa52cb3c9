// What prepare decides once per run, so every step of the run uses the same prompt, model and
// settings: the steps after prepare never read settings.json.
import type { SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { dataKeys } from '../../ids.ts';
import type { RunInput } from '../../contracts.ts';
import type { Settings } from '../../settings/schema.ts';
import { EVENT_DEFAULTS } from '../../settings/groups/events.ts';
import { LIMIT_DEFAULTS } from '../../settings/groups/limits.ts';
import { SANDBOX_DEFAULTS } from '../../settings/groups/sandbox.ts';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { isS3PreconditionFailed } from '../../aws/errors.ts';
import { readText, type StoreDeps } from '../../context/store.ts';
import type { ToolPolicy } from '../../tools/allowed-tools.ts';
import type { Price } from '../../model/pricing.ts';
import type { Budget } from '../../policy/budgets.ts';
import type { RunReach } from '../../reach/run-reach.ts';
import { recentlyUsed } from '../../support/recent.ts';
import type { ApprovalRule } from '../../approvals/rules.ts';
import type { Hook } from '../../hooks/settings.ts';

export interface RunSnapshot {
  modelId: string;
  maxOutputTokens: number;
  temperature?: number;
  maxModelSteps: number;
  /** The agent definition the run works as (shared/agents/), by name. */
  agent?: string;
  /** The agent's tools: the only ones the model is offered and may call (absent: every tool). */
  tools?: string[];
  maxToolCallsPerTurn: number;
  maxRunMinutes: number;
  /** Epoch milliseconds when the run was prepared: maxRunMinutes counts from here. */
  startedAt: number;
  /** A subagent's: when its root run's time runs out (epoch milliseconds), which it shares. */
  deadlineAt?: number;
  /** The run may start subagents (the `subagent` tool): its depth is below settings.json `maxSubagentDepth`. */
  delegates?: boolean;
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
  /** settings.json `limits.maxRunningSandboxes` as the run began: a tool call past it starts no sandbox. */
  maxRunningSandboxes: number;
  /** settings.json `sandbox` as the run began: what the sandbox step keeps of /workspace/data. */
  sandbox: Settings['sandbox'];
  /** settings.json `maxEventFilesPerRun` as the run began. */
  maxEventFilesPerRun: number;
  /** What the run may reach beyond the sandbox (web_fetch's hosts, MCP servers), for its channel; absent: nothing. */
  reach?: RunReach;
  /** settings.json `approvals` (the deployment's and the channel's) as the run began, approvers resolved. */
  approvals?: ApprovalRule[];
  /** settings.json `hooks` (the deployment's, then the channel's) as the run began; absent: none, and no hook costs a call. */
  hooks?: Hook[];
  /** Who decides a call a PreToolUse hook makes wait for a person: settings.json's admins as the run began. */
  hookApprovers?: string[];
}

/**
 * A run prepared by the version before these were in the snapshot, and handed over to a fresh
 * execution of this one across a deploy, goes on under the defaults.
 */
const ADDED_SINCE = {
  maxRunningSandboxes: LIMIT_DEFAULTS.maxRunningSandboxes,
  sandbox: SANDBOX_DEFAULTS,
  maxEventFilesPerRun: EVENT_DEFAULTS.maxEventFilesPerRun,
} satisfies Partial<RunSnapshot>;

/** What a handler container has read of its runs, by run id: each is written once per run, before any step reads it. */
export interface RunCache<T> {
  get(runId: string): T | undefined;
  set(runId: string, value: T): void;
}

export type SnapshotCache = RunCache<RunSnapshot>;

/** The `max` most recently read values of each run (a container steps a few runs at a time; a system prompt can be large). */
export function recentByRun<T>(max = 20): RunCache<T> {
  return recentlyUsed<T>(max);
}

export const recentSnapshots = (max = 20): SnapshotCache => recentByRun<RunSnapshot>(max);

export interface SnapshotDeps {
  store: StoreDeps;
  /** Absent: every load reads S3. */
  snapshots?: SnapshotCache;
}

/** `runs/<runId>.json` in the thread's folder; `suffix` names a file kept beside it. */
/** When the run must stop working (epoch milliseconds): maxRunMinutes after it began, or its root's end for a subagent. */
export const runDeadline = (snapshot: Pick<RunSnapshot, 'startedAt' | 'maxRunMinutes' | 'deadlineAt'>): number =>
  snapshot.deadlineAt ?? snapshot.startedAt + snapshot.maxRunMinutes * 60_000;

export const runFileKey = (run: RunInput, suffix = '') => `${dataKeys(run.threadId).threadDir}/runs/${run.runId}${suffix}.json`;
const snapshotKey = (run: RunInput) => runFileKey(run);

/**
 * Written by prepare; the container keeps it, so a later step of the run there reads nothing.
 * `keepStored`: a retried prepare's, written only if no earlier attempt stored one, which the run
 * then keeps (its model, bounds and start time as first decided). Returns the snapshot the run keeps.
 */
export async function saveSnapshot(
  deps: SnapshotDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  options: { keepStored?: boolean } = {},
): Promise<RunSnapshot> {
  const key = snapshotKey(run);
  let kept = snapshot;
  try {
    await deps.store.s3.send(
      new PutObjectCommand({
        Bucket: deps.store.bucket,
        Key: key,
        Body: JSON.stringify(snapshot),
        ContentType: 'application/json',
        ...(options.keepStored ? { IfNoneMatch: '*' } : {}),
      }),
    );
  } catch (error) {
    if (!options.keepStored || !isS3PreconditionFailed(error)) throw error;
    const stored = await readText(deps.store, key);
    if (!stored) throw new Error(`Run snapshot ${key} exists and cannot be read`, { cause: error });
    kept = JSON.parse(stored) as RunSnapshot;
  }
  const full = { ...ADDED_SINCE, ...kept };
  deps.snapshots?.set(run.runId, full);
  return full;
}

export async function loadSnapshot(deps: SnapshotDeps, run: RunInput): Promise<RunSnapshot> {
  const known = deps.snapshots?.get(run.runId);
  if (known) return known;
  const raw = await readText(deps.store, snapshotKey(run));
  if (!raw) throw new Error(`Run snapshot missing for ${run.runId}: prepare did not complete`);
  const snapshot: RunSnapshot = { ...ADDED_SINCE, ...(JSON.parse(raw) as RunSnapshot) };
  deps.snapshots?.set(run.runId, snapshot);
  return snapshot;
}
