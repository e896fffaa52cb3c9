// The console's side panels, read from the stack as an operator would: the runs going (the ops CLI's
// own listRuns: requester, steps, cost, prompts queued) and the last runs' audit records; the last
// hour of the functions' metrics (the local CloudWatch's data points) as per-minute series; each
// budget of settings.json with what is spent and left (the runtime's budget code picks the counters);
// the event files in the bucket and the Scheduler's schedules; and settings.json's problems, in the
// words the functions use.
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AUDIT_PREFIX, type AuditRecord } from '../../../../shared/observability/audit.ts';
import { EVENTS_PREFIX } from '../../../../shared/events/scope.ts';
import { ROOT_KEYS } from '../../../../shared/ids.ts';
import { listRuns, type RunningRun } from '../../../../shared/policy/kill-switch.ts';
import { budgetsFor, dollars, readSpend, type Budget } from '../../../../shared/policy/budgets.ts';
import type { TriggerKind } from '../../../../shared/run/trigger-kind.ts';
import { parseSettingsText } from '../../../../shared/settings/load.ts';
import type { MetricPoint } from '../metrics.ts';
import type { LocalSchedule } from '../scheduler/index.ts';

export interface PanelSources {
  s3: S3Client;
  bucket: string;
  table: { db: DynamoDBDocumentClient; tableName: string };
  metricPoints(): readonly MetricPoint[];
  schedules(): Iterable<LocalSchedule>;
  /** Who has used the stack (from the threads shown): whose budgets to show for budgets that apply to each one. */
  spenders(): { adapter: string; channel: string; user?: string }[];
  now?: () => number;
}

export interface MetricSeries {
  name: string;
  unit: string;
  /** Per minute, oldest first, the last `minutes` minutes: the sum of the points in that minute. */
  perMinute: number[];
  total: number;
  /** The series as an SVG polyline's points in a SPARKLINE box. */
  sparkline: string;
}

/** The size of a metric's chart in the panel. */
export const SPARKLINE = { width: 160, height: 28 };

export interface BudgetLine {
  label: string;
  usd: number;
  spentUsd: number;
  leftUsd: number;
  /** "$1.23 of $5.00 spent, $3.77 left" */
  text: string;
}

export interface AuditLine {
  runId: string;
  threadId: string;
  outcome: string;
  endedAt: string;
  steps: number;
  toolCalls: { name: string; outcome: string }[];
  costUsd?: number;
}

export interface ConsolePanels {
  running: RunningRun[];
  queued: number;
  audit: AuditLine[];
  metrics: MetricSeries[];
  budgets: BudgetLine[];
  eventFiles: { key: string; size: number; modifiedAt: string }[];
  schedules: { name: string; expression: string; nextFire?: string; state: string; target: string }[];
  settingsProblems: string[];
}

const MINUTE = 60_000;

/** The points of the last `minutes` minutes, summed per metric and minute (oldest minute first), whatever their dimensions. */
export function metricSeries(points: readonly MetricPoint[], now: number, minutes = 60): MetricSeries[] {
  const end = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  const start = end - minutes * MINUTE;
  const byName = new Map<string, MetricSeries>();
  for (const point of points) {
    if (point.at < start || point.at >= end) continue;
    const series = byName.get(point.name) ?? {
      name: point.name,
      unit: point.unit,
      perMinute: new Array<number>(minutes).fill(0),
      total: 0,
      sparkline: '',
    };
    series.perMinute[Math.floor((point.at - start) / MINUTE)]! += point.value;
    series.total += point.value;
    byName.set(point.name, series);
  }
  return [...byName.values()]
    .map((series) => ({ ...series, sparkline: sparklinePoints(series.perMinute, SPARKLINE.width, SPARKLINE.height) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** An SVG polyline's points for a sparkline of `values` in a width × height box (the highest value at the top). */
export function sparklinePoints(values: readonly number[], width: number, height: number): string {
  if (values.length === 0) return '';
  const max = Math.max(...values, 0) || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values.map((v, i) => `${+(i * step).toFixed(1)},${+(height - (v / max) * height).toFixed(1)}`).join(' ');
}

/**
 * Each budget with what its counter says: a budget for one adapter, channel or user, or the
 * deployment, has one counter; one that applies to each adapter, channel or user separately has
 * one per spender seen. The runtime's budgetsFor picks the counter keys and labels.
 */
export async function budgetLines(
  table: PanelSources['table'],
  budgets: readonly Budget[],
  spenders: ReturnType<PanelSources['spenders']>,
  now: Date,
): Promise<BudgetLine[]> {
  const seen = new Map<string, { label: string; usd: number; key: { pk: string; sk: string } }>();
  const kinds: TriggerKind[] = ['message', 'schedule', 'trigger'];
  // A spender for the deployment and for budgets that name who they are for, besides those seen.
  const subjects = [{ adapter: '', channel: '' }, ...spenders].flatMap((s) => kinds.map((trigger) => ({ ...s, trigger })));
  for (const budget of budgets) {
    for (const subject of subjects) {
      for (const applied of budgetsFor([budget], subject, now)) {
        const id = `${applied.key.pk}|${applied.key.sk}`;
        if (!seen.has(id)) seen.set(id, { label: applied.label.replace(/^the /, ''), usd: budget.usd, key: applied.key });
      }
    }
  }
  return Promise.all(
    [...seen.values()].map(async ({ label, usd, key }) => {
      const { spentUsd } = await readSpend(table, key);
      const leftUsd = Math.max(0, usd - spentUsd);
      return { label, usd, spentUsd, leftUsd, text: `${dollars(spentUsd)} of ${dollars(usd)} spent, ${dollars(leftUsd)} left` };
    }),
  );
}

async function listKeys(s3: S3Client, bucket: string, prefix: string) {
  const objects: { key: string; size: number; modifiedAt: Date }[] = [];
  let token: string | undefined;
  do {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of out.Contents ?? []) objects.push({ key: o.Key!, size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) });
    token = out.NextContinuationToken;
  } while (token);
  return objects;
}

async function readText(s3: S3Client, bucket: string, key: string): Promise<string | undefined> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return await out.Body?.transformToString();
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

/** How many of the last audit records the panel shows. */
const AUDIT_SHOWN = 10;

export function panelReader(sources: PanelSources) {
  // An audit record is written once: read each one once.
  const audits = new Map<string, AuditLine>();
  const auditLine = async (key: string): Promise<AuditLine | undefined> => {
    const known = audits.get(key);
    if (known) return known;
    const text = await readText(sources.s3, sources.bucket, key);
    if (!text) return undefined;
    const record = JSON.parse(text) as AuditRecord;
    const line: AuditLine = {
      runId: record.runId,
      threadId: record.threadId,
      outcome: record.outcome,
      endedAt: record.endedAt,
      steps: record.steps,
      toolCalls: record.toolCalls.map((c) => ({ name: c.name, outcome: c.outcome })),
      ...(record.costUsd === undefined ? {} : { costUsd: record.costUsd }),
    };
    audits.set(key, line);
    return line;
  };

  return async function panels(): Promise<ConsolePanels> {
    const now = (sources.now ?? Date.now)();
    const { s3, bucket, table } = sources;
    const [running, auditKeys, eventFiles, settingsText] = await Promise.all([
      listRuns({ actor: table, store: { s3, bucket } }),
      listKeys(s3, bucket, AUDIT_PREFIX),
      listKeys(s3, bucket, EVENTS_PREFIX),
      readText(s3, bucket, ROOT_KEYS.settings),
    ]);
    const loaded = parseSettingsText(settingsText);
    const newest = auditKeys.sort((a, b) => b.modifiedAt.getTime() - a.modifiedAt.getTime()).slice(0, AUDIT_SHOWN);
    const audit = (await Promise.all(newest.map((o) => auditLine(o.key)))).filter((a): a is AuditLine => a !== undefined);
    return {
      running,
      queued: running.reduce((n, r) => n + r.queued, 0),
      audit,
      metrics: metricSeries(sources.metricPoints(), now),
      budgets: await budgetLines(table, loaded.settings.budgets, sources.spenders(), new Date(now)),
      eventFiles: eventFiles.map((o) => ({ key: o.key, size: o.size, modifiedAt: o.modifiedAt.toISOString() })),
      schedules: [...sources.schedules()].map((s) => ({
        name: s.name,
        expression: s.expression,
        state: s.state,
        target: s.target.Arn.split(':').pop() ?? s.target.Arn,
        ...(s.nextFire ? { nextFire: s.nextFire.toISOString() } : {}),
      })),
      settingsProblems: loaded.problems,
    };
  };
}
