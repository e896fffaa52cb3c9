// The stack the local cloud runs, synthesized from infra/ as for AWS but without bundling (the
// handlers run from source). A synth costs seconds of CPU, most of it loading aws-cdk-lib, and
// every test file starts a local cloud of its own; so a synthesized stack is kept on disk, keyed by
// a hash of everything a synth reads: the settings, the project's files (all but tests, docs and
// benchmarks: infra, the shared code it imports, the sandbox image's build context, this file) and
// the lock file, which pins aws-cdk-lib. Any change to one of them makes a new key, so an entry is
// never stale; the oldest entries are deleted.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { PROJECT_ROOT, type FunctionRole } from '../../../../infra/function-entries.ts';
import type { SandboxNetworkMode } from '../../../../infra/settings.ts';
import type { PlatformName } from '../../../../shared/platforms/descriptors.ts';
import type { Template } from './resources.ts';

/** The deployment settings a local stack is synthesized with; the rest are the defaults. */
export interface LocalStackSettings {
  modelId?: string;
  /** Declared triggers, as `triggers` in cdk.json (validated as `cdk synth` does). */
  triggers?: unknown;
  chatPlatforms?: readonly PlatformName[];
  sandboxNetwork?: SandboxNetworkMode;
  alarmEmail?: string;
  reachAllowLoopback?: boolean;
  hookFunctions?: readonly string[];
}

export interface SynthesizedStack {
  template: Template;
  /** Each function's logical id by role (the Teams webhook only where the stack serves Teams). */
  logicalIds: Partial<Record<FunctionRole, string>>;
  stackName: string;
  /** The logical ids of the data bucket and of the inbox queue. */
  dataBucketId: string;
  inboxId: string;
}

const CACHE_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'local-cloud', 'synth');
const ENTRIES_KEPT = 24;
/** What no synth reads: dependencies, outputs, and the project's tests, docs and benchmarks. */
const SKIPPED_ANYWHERE = new Set(['node_modules', '.git', '.local', 'cdk.out', 'dist', 'coverage']);
const SKIPPED_AT_ROOT = new Set(['test', 'docs', 'bench']);

/** The stack with these settings: from the cache when the sources and settings are unchanged. */
export async function synthesizeLocalStack(settings: LocalStackSettings = {}): Promise<SynthesizedStack> {
  const file = join(CACHE_DIR, `${cacheKey(settings)}.json`);
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SynthesizedStack;
  } catch {
    // Not synthesized with these sources and settings yet.
  }
  const synthesized = await synthesize(settings);
  mkdirSync(CACHE_DIR, { recursive: true });
  // Written whole, then renamed: a test file starting at the same moment reads all of it or nothing.
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(synthesized));
  renameSync(partial, file);
  pruneCache();
  return synthesized;
}

function cacheKey(settings: LocalStackSettings): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(settings));
  // CDK reads its own environment variables (CDK_CONTEXT_JSON, CDK_DEFAULT_REGION, ...).
  for (const [name, value] of Object.entries(process.env).sort()) if (name.startsWith('CDK_')) hash.update(`${name}=${value}\0`);
  for (const path of projectFiles(PROJECT_ROOT)) {
    hash.update(`${relative(PROJECT_ROOT, path)}\0`);
    hash.update(readFileSync(path));
  }
  return hash.digest('hex').slice(0, 32);
}

function projectFiles(directory: string): string[] {
  const atRoot = directory === PROJECT_ROOT || `${directory}/` === PROJECT_ROOT;
  return readdirSync(directory, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((entry) => {
      if (SKIPPED_ANYWHERE.has(entry.name) || (atRoot && SKIPPED_AT_ROOT.has(entry.name))) return [];
      const path = join(directory, entry.name);
      if (entry.isDirectory()) return entry.name === 'test' && directory.endsWith('packages/local-cloud') ? [] : projectFiles(path);
      return entry.isFile() ? [path] : [];
    });
}

async function synthesize(settings: LocalStackSettings): Promise<SynthesizedStack> {
  // Loaded only here: aws-cdk-lib alone takes seconds, which a cached stack does not need.
  const [{ App }, { AgentRuntimeStack }, { DEFAULT_SETTINGS }, { parseTriggers }] = await Promise.all([
    import('aws-cdk-lib'),
    import('../../../../infra/stack.ts'),
    import('../../../../infra/settings.ts'),
    import('../../../../shared/triggers/declaration.ts'),
  ]);
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-local-synth-'));
  try {
    // Bundling is for deployment; locally the handlers run from source.
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new AgentRuntimeStack(app, 'Threadwork', {
      settings: {
        ...DEFAULT_SETTINGS,
        modelId: settings.modelId ?? DEFAULT_SETTINGS.modelId,
        triggers: parseTriggers(settings.triggers ?? []),
        chatPlatforms: settings.chatPlatforms ?? DEFAULT_SETTINGS.chatPlatforms,
        sandboxNetwork: settings.sandboxNetwork ?? DEFAULT_SETTINGS.sandboxNetwork,
        ...(settings.alarmEmail ? { alarmEmail: settings.alarmEmail } : {}),
        reachAllowLoopback: settings.reachAllowLoopback ?? false,
        hookFunctions: settings.hookFunctions ?? [],
      },
    });
    const template = app.synth().getStackByName(stack.stackName).template as Template;
    const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
    return {
      template,
      logicalIds: Object.fromEntries(Object.entries(stack.functions).map(([role, fn]) => [role, logicalIdOf(fn)])),
      stackName: stack.stackName,
      dataBucketId: logicalIdOf(stack.bucket),
      inboxId: logicalIdOf(stack.inbox),
    };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

function pruneCache(): void {
  const entries = readdirSync(CACHE_DIR)
    .filter((name) => name.endsWith('.json'))
    .map((name) => ({ path: join(CACHE_DIR, name), used: statSync(join(CACHE_DIR, name)).mtimeMs }))
    .sort((a, b) => b.used - a.used);
  for (const { path } of entries.slice(ENTRIES_KEPT)) rmSync(path, { force: true });
}
