// How the CLIs find the local stack they mean: `npm start` writes its pid, every port it listens on
// and the URLs the CLIs use to .local/stack.json (LOCAL_STACK_FILE moves it, for a second stack from
// one checkout), and removes it on exit. `npm run chat`, `ops` and `doctor -- --local` read it and
// refuse a stale one (its process gone, or a port not answering) rather than reach whatever now
// listens on a default port: two stacks on one machine never cross.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { operatorEnvOf, type OperatorEnv } from './operator-env.ts';
import type { LocalCloud } from './cloud.ts';

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
const DEFAULT_STACK_FILE = resolve(CHECKOUT, '.local/stack.json');

/** One port the stack listens on: what serves it, and the variable that moves it where one does. */
export interface ListeningPort {
  port: number;
  what: string;
  variable?: string;
}

/** The URLs the CLIs talk to. */
export interface LocalStackUrls {
  api: string;
  eventBridge: string;
  metrics: string;
  /** The Slack and Teams stand-ins (absent when a real workspace is used). */
  slack?: string;
  teams?: string;
  /** For `doctor -- --local`: the Slack Web API, the Bot Framework token endpoint, a local model. */
  slackApi?: string;
  teamsToken?: string;
  model?: string;
}

export interface LocalStackRecord extends OperatorEnv {
  /** The `npm start` process: gone means the file is stale. */
  pid: number;
  startedAt: string;
  ports: ListeningPort[];
  urls: LocalStackUrls;
}

export class LocalStackError extends Error {}

/** What a running stack is made of, as far as its CLIs care. */
export interface LocalStackParts {
  cloud: Pick<LocalCloud, 'env' | 'deployment' | 'apiUrl' | 'eventBridge' | 'metrics'>;
  slack?: { url: string; apiUrl: string };
  teams?: { url: string; tokenUrl: string };
  model?: { endpoint: string; name: string };
  startedAt: Date;
  pid?: number;
}

/** The record of a running stack: every port it listens on (each once), with what it is. */
export function localStackRecord(parts: LocalStackParts): LocalStackRecord {
  const { cloud, slack, teams, model } = parts;
  const operator = operatorEnvOf(cloud);
  const named: { url: string | undefined; what: string; variable?: string }[] = [
    { url: cloud.apiUrl, what: 'the webhook API', variable: 'PORT' },
    { url: slack?.url, what: 'the Slack stand-in', variable: 'LOCAL_SLACK_PORT' },
    { url: cloud.eventBridge.endpoint, what: 'the local EventBridge', variable: 'LOCAL_EVENTBRIDGE_PORT' },
    { url: teams?.url, what: 'the Teams stand-in', variable: 'LOCAL_TEAMS_PORT' },
    { url: cloud.metrics.endpoint, what: 'the metrics summary', variable: 'LOCAL_METRICS_PORT' },
    { url: model?.endpoint, what: `the local ${model?.name} model` },
    ...Object.entries(operator.env)
      .filter(([key]) => key.startsWith('AWS_ENDPOINT_URL_'))
      .map(([key, url]) => ({ url, what: `the local ${key.slice('AWS_ENDPOINT_URL_'.length)} endpoint` })),
  ];
  const ports = new Map<number, ListeningPort>();
  for (const { url, what, variable } of named) {
    const port = url ? Number(new URL(url).port) : 0;
    if (port && !ports.has(port)) ports.set(port, { port, what, ...(variable ? { variable } : {}) });
  }
  return {
    ...operator,
    pid: parts.pid ?? process.pid,
    startedAt: parts.startedAt.toISOString(),
    ports: [...ports.values()],
    urls: {
      api: cloud.apiUrl,
      eventBridge: cloud.eventBridge.endpoint,
      metrics: cloud.metrics.endpoint,
      ...(slack ? { slack: slack.url, slackApi: slack.apiUrl } : {}),
      ...(teams ? { teams: teams.url, teamsToken: teams.tokenUrl } : {}),
      ...(model ? { model: model.endpoint } : {}),
    },
  };
}

/** Where the stack file is: LOCAL_STACK_FILE (relative to the working directory) or .local/stack.json. */
export function localStackFile(env: NodeJS.ProcessEnv = process.env): string {
  return env.LOCAL_STACK_FILE ? resolve(env.LOCAL_STACK_FILE) : DEFAULT_STACK_FILE;
}

/** How a message names the file: relative to the checkout when inside it. */
export function shownPath(path: string): string {
  const inside = relative(CHECKOUT, path);
  return inside.startsWith('..') ? path : inside;
}

export function writeLocalStack(record: LocalStackRecord, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
}

/** Removes the file if it is still this process's (a later stack may have taken the name over). */
export function removeLocalStack(path: string, pid = process.pid): void {
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as Partial<LocalStackRecord>;
    if (record.pid !== pid) return;
  } catch {
    return;
  }
  rmSync(path, { force: true });
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function portAnswers(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    const finish = (answered: boolean) => {
      socket.destroy();
      done(answered);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

/** Why the record no longer describes a running stack: empty when it does. */
export async function staleness(record: LocalStackRecord): Promise<string[]> {
  if (!pidAlive(record.pid)) return [`the npm start that wrote it (pid ${record.pid}) is no longer running`];
  const answers = await Promise.all(record.ports.map((p) => portAnswers(p.port)));
  return record.ports.filter((_, i) => !answers[i]).map((p) => `port ${p.port} (${p.what}) does not answer`);
}

function parseRecord(text: string, path: string): LocalStackRecord {
  let record: Partial<LocalStackRecord>;
  try {
    record = JSON.parse(text) as Partial<LocalStackRecord>;
  } catch {
    throw new LocalStackError(`${shownPath(path)} is not JSON: remove it and start the stack again (npm start).`);
  }
  if (typeof record.pid !== 'number' || !Array.isArray(record.ports) || !record.urls || !record.stackName) {
    throw new LocalStackError(`${shownPath(path)} was written by an older npm start: stop that stack, remove the file and start again.`);
  }
  return record as LocalStackRecord;
}

/** The record at `path` if a live stack wrote it; undefined when there is none or it is stale. */
export async function liveLocalStack(path: string): Promise<LocalStackRecord | undefined> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const record = parseRecord(text, path);
    return (await staleness(record)).length === 0 ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The running local stack the CLIs act on, from its file. No file, or a stale one, is an error that
 * says what to do: a CLI never guesses a port.
 */
export async function openLocalStack(path = localStackFile()): Promise<LocalStackRecord> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new LocalStackError(
      `No local stack is running from this checkout (${shownPath(path)} does not exist): start one with npm start, ` +
        'set LOCAL_STACK_FILE to the file of the one you mean, or name a deployed stack with --stack NAME where the command takes it.',
    );
  }
  const record = parseRecord(text, path);
  const stale = await staleness(record);
  if (stale.length > 0) {
    throw new LocalStackError(
      `warning: ${shownPath(path)} is stale: ${stale.join('; ')}. Start the stack again (npm start), or remove the file.`,
    );
  }
  return record;
}
