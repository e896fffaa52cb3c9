// Section 4: each Lambda bundled the way infra/constructs/agent-function.ts has CDK's
// NodejsFunction do it with the local esbuild (aws-lambda-nodejs turns those props into these
// esbuild options: --bundle --platform=node --target=node22 --format=esm --outfile=index.mjs
// --minify --sourcemap --sources-content=false --banner:js=... --main-fields=module,main, the
// construct's externals (the runtime's AWS SDK unless bundleAwsSdk) and its --alias entries).
// The asset CDK zips is the output directory: index.mjs and index.mjs.map. Bundles go to a
// temporary directory under node_modules/.cache (so a bundle's imports of the runtime's AWS SDK
// resolve when its cold start is measured), removed afterwards.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { FUNCTION_ENTRIES, PROJECT_ROOT, type FunctionRole } from '../infra/function-entries.ts';
import { BUNDLE_BUDGET, bundleAliasesOf, bundleExternals, REQUIRE_SHIM } from '../infra/constructs/agent-function.ts';
import { bundleImportMs } from './cold-starts.ts';

/** This project's own budget for each function's index.mjs: what a cold start loads and parses. */
export const BUNDLE_LIMIT = BUNDLE_BUDGET;

/** Lambda's deployment package limits (zip uploaded directly / all files unzipped). */
export const LAMBDA_ZIPPED_LIMIT = 50 * 1024 * 1024;
export const LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024;

export interface BundleResult {
  role: FunctionRole;
  entry: string;
  buildMs: number;
  codeBytes: number;
  codeGzip: number;
  mapBytes: number;
  mapGzip: number;
  /** Everything in the asset, unzipped (what counts against 250 MB). */
  unzipped: number;
  /** gzip of each file, summed: close to the zip CDK uploads (what counts against 50 MB). */
  zipped: number;
  warnings: number;
  composition: Composition;
  /** Cold start: a fresh Node process importing index.mjs (median ms); measured for the default bundles only. */
  importMs?: number;
}

/** What index.mjs is made of (bytes of minified output per source). */
export interface Composition {
  /** @aws-sdk/*, @smithy/*, @aws-crypto/*. */
  awsSdk: number;
  /** The Chat SDK and what it brings: chat, @chat-adapter/*, @slack/*, and their own dependencies. */
  chatSdk: number;
  /** The AWS SDK service clients bundled, e.g. client-dynamodb. */
  sdkClients: string[];
  /** The AWS SDK packages imported from the Lambda runtime instead, e.g. client-dynamodb, lib-dynamodb. */
  runtimeSdk: string[];
  project: number;
  /** The largest other packages. */
  largest: { name: string; bytes: number }[];
}

function packageOf(inputPath: string): string | undefined {
  return /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(inputPath)?.[1]?.replace('\\', '/');
}

const isAwsSdk = (name: string) => /^@(aws-sdk|smithy|aws-crypto)\//.test(name);

function compositionOf(metafile: Metafile, outfile: string): Composition {
  // Output paths in the metafile are relative to the working directory: match on the tail.
  const tail = outfile.split(/[\\/]/).slice(-2).join('/');
  const output = Object.entries(metafile.outputs).find(([path]) => path.endsWith(tail))?.[1];
  const byPackage = new Map<string, number>();
  let project = 0;
  for (const [path, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const name = packageOf(path);
    if (name) byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
    else project += bytesInOutput;
  }
  const packages = [...byPackage].sort((a, b) => b[1] - a[1]);
  const chatOnly = chatSdkPackages(metafile);
  const runtimeSdk = new Set(
    Object.values(metafile.inputs).flatMap(({ imports }) =>
      imports.filter((i) => i.external && isAwsSdk(i.path)).map((i) => i.path.replace(/^@aws-sdk\//, '')),
    ),
  );
  return {
    awsSdk: packages.filter(([name]) => isAwsSdk(name)).reduce((sum, [, n]) => sum + n, 0),
    chatSdk: packages.filter(([name]) => chatOnly.has(name)).reduce((sum, [, n]) => sum + n, 0),
    sdkClients: packages
      .map(([name]) => name)
      .filter((name) => name.startsWith('@aws-sdk/client-'))
      .map((name) => name.slice('@aws-sdk/'.length))
      .sort(),
    runtimeSdk: [...runtimeSdk].sort(),
    project,
    largest: packages
      .filter(([name]) => !isAwsSdk(name))
      .slice(0, 5)
      .map(([name, bytes]) => ({ name, bytes })),
  };
}

const isChatSdk = (name: string) => name === 'chat' || /^@(chat-adapter|slack)\//.test(name);

/**
 * The packages in the bundle only because of the Chat SDK: reached from chat, @chat-adapter/* or
 * @slack/* and from nothing outside them (axios and mime-db are; zod, which the project uses too, is not).
 */
function chatSdkPackages(metafile: Metafile): Set<string> {
  const importers = new Map<string, Set<string>>();
  for (const [path, { imports }] of Object.entries(metafile.inputs)) {
    const from = packageOf(path) ?? '(project)';
    for (const { path: to } of imports) {
      const name = packageOf(to);
      if (name && name !== from) importers.set(name, (importers.get(name) ?? new Set()).add(from));
    }
  }
  const chatOnly = new Set([...importers.keys()].filter(isChatSdk));
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, from] of importers) {
      if (!chatOnly.has(name) && [...from].every((importer) => chatOnly.has(importer))) {
        chatOnly.add(name);
        grew = true;
      }
    }
  }
  return chatOnly;
}

async function bundleOne(role: FunctionRole, entry: string, outDir: string, bundleAwsSdk: boolean): Promise<BundleResult> {
  const outfile = join(outDir, role, 'index.mjs');
  const started = performance.now();
  const result = await build({
    entryPoints: [join(PROJECT_ROOT, entry)],
    absWorkingDir: PROJECT_ROOT,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    outfile,
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    banner: { js: REQUIRE_SHIM },
    mainFields: ['module', 'main'],
    external: bundleExternals(bundleAwsSdk),
    alias: { ...bundleAliasesOf(role) },
    metafile: true,
    logLevel: 'silent',
  });
  const buildMs = performance.now() - started;
  const [code, map] = await Promise.all([readFile(outfile), readFile(`${outfile}.map`)]);
  const codeGzip = gzipSync(code).length;
  const mapGzip = gzipSync(map).length;
  return {
    role,
    entry,
    buildMs,
    codeBytes: code.length,
    codeGzip,
    mapBytes: map.length,
    mapGzip,
    unzipped: code.length + map.length,
    zipped: codeGzip + mapGzip,
    warnings: result.warnings.length,
    composition: compositionOf(result.metafile, outfile),
    importMs: bundleAwsSdk ? undefined : bundleImportMs(outfile),
  };
}

/** Every function's bundle, as deployed by default or (bundleAwsSdk) with the pinned AWS SDK inside. */
export async function measureBundles(bundleAwsSdk = false): Promise<BundleResult[]> {
  const cache = join(PROJECT_ROOT, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const outDir = await mkdtemp(join(cache, 'threadwork-bench-bundles-'));
  try {
    const results: BundleResult[] = [];
    // One at a time, so each build time is its own.
    for (const [role, entry] of Object.entries(FUNCTION_ENTRIES) as [FunctionRole, string][]) {
      results.push(await bundleOne(role, entry, outDir, bundleAwsSdk));
    }
    return results;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}
