// The shared files a run's system prompt is made of: IDENTITY.md, SYSTEM.md, the three MEMORY.md
// levels and the three skills folders. Prepare needs them for every run, yet they change rarely,
// so a warm container keeps what it read, per scope (global, the platform, the channel), and reads a
// scope again when:
//  - it is the channel's scope and the channel's workspace version moved since (shared/sandbox/
//    workspace-version.ts): the runtime bumps it after each of its own writes to the channel's files
//    (a sandbox saving MEMORY.md or a skill), so what another thread wrote a moment ago is read by
//    the next run, on any container; or
//  - what it kept is `maxAgeMs` old (PROMPT_FILES_CACHE_SECONDS): a file written straight to S3
//    (an operator's upload) bumps nothing, so runs starting that long after it see it. The global
//    and platform scopes have no runtime writer (a sandbox cannot change them): only this bounds them.
// The version is read before the files: a bump it missed was either before the reads (they have
// the file) or after them (the next run sees a new version and reads again).
import { dataKeys, ROOT_KEYS } from '../ids.ts';
import { workspaceLayout } from '../sandbox/workspace.ts';
import type { Recent } from '../support/recent.ts';
import { loadScopeSkills, mergeSkills, skillPrefixes, type Skill } from './skills.ts';
import { readText, type StoreDeps } from './store.ts';

export interface PromptFiles {
  identity?: string;
  systemNotes?: string;
  memory: { global?: string; transport?: string; channel?: string };
  /** The three scopes' skills merged (see mergeSkills). */
  skills: Skill[];
  /** Why skill folders were skipped (a missing or invalid SKILL.md). */
  skillProblems: string[];
}

/** What one scope holds: its files' texts by key (undefined: no such file), its skills, and their problems. */
interface ScopeFiles {
  texts: Record<string, string | undefined>;
  skills: Skill[];
  skillProblems: string[];
}

/** One scope's files as a container read them: when the reads began, and at which workspace version (channel scope). */
export interface KeptScope {
  files: ScopeFiles;
  readAt: number;
  version?: number;
}

export interface PromptFilesCache {
  /** Kept scopes by their data directory ('' for the global scope). */
  kept: Recent<KeptScope>;
  /** How long a kept scope may be used (0: read every run). */
  maxAgeMs: number;
  /** Epoch milliseconds. */
  now: () => number;
}

interface Scope {
  /** Its data directory: the cache key, and the workspace version's key for the channel. */
  dir: string;
  keys: string[];
  skillsPrefix: string;
}

function scopesOf(threadId: string): [Scope, Scope, Scope] {
  const [global, transport, channel] = workspaceLayout(threadId).memoryKeys as [string, string, string];
  const { transportDir, channelDir } = dataKeys(threadId);
  const prefixes = skillPrefixes(threadId);
  return [
    { dir: '', keys: [ROOT_KEYS.identity, ROOT_KEYS.system, global], skillsPrefix: prefixes.global },
    { dir: transportDir, keys: [transport], skillsPrefix: prefixes.transport },
    { dir: channelDir, keys: [channel], skillsPrefix: prefixes.channel },
  ];
}

async function readScope(store: StoreDeps, scope: Scope): Promise<ScopeFiles> {
  const skillProblems: string[] = [];
  const [skills, ...texts] = await Promise.all([
    loadScopeSkills(store, scope.skillsPrefix, (problem) => skillProblems.push(problem)),
    ...scope.keys.map((key) => readText(store, key)),
  ]);
  return { texts: Object.fromEntries(scope.keys.map((key, i) => [key, texts[i]])), skills, skillProblems };
}

/** A scope from the container when what it kept is fresh enough (and, for the channel, at `version`), else from S3. */
async function scopeFiles(store: StoreDeps, cache: PromptFilesCache | undefined, scope: Scope, version?: number): Promise<ScopeFiles> {
  if (!cache || cache.maxAgeMs <= 0) return readScope(store, scope);
  const kept = cache.kept.get(scope.dir);
  const readAt = cache.now();
  if (kept && readAt - kept.readAt < cache.maxAgeMs && kept.version === version) return kept.files;
  const files = await readScope(store, scope);
  cache.kept.set(scope.dir, { files, readAt, ...(version === undefined ? {} : { version }) });
  return files;
}

/**
 * The thread's shared prompt files: as S3 has them, or as this container kept them when nothing says
 * they changed. `channelVersion` is the channel's workspace version, read before this is called.
 */
export async function readPromptFiles(
  store: StoreDeps,
  cache: PromptFilesCache | undefined,
  threadId: string,
  channelVersion: number,
): Promise<PromptFiles> {
  const [global, transport, channel] = scopesOf(threadId);
  const scopes = await Promise.all([
    scopeFiles(store, cache, global),
    scopeFiles(store, cache, transport),
    scopeFiles(store, cache, channel, channelVersion),
  ]);
  const [g, t, c] = scopes as [ScopeFiles, ScopeFiles, ScopeFiles];
  return {
    identity: g.texts[ROOT_KEYS.identity],
    systemNotes: g.texts[ROOT_KEYS.system],
    memory: { global: g.texts[global.keys[2]!], transport: t.texts[transport.keys[0]!], channel: c.texts[channel.keys[0]!] },
    skills: mergeSkills(scopes.map((s) => s.skills)),
    skillProblems: scopes.flatMap((s) => s.skillProblems),
  };
}
