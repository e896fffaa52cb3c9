// The sandbox container image: containers/sandbox built for ARM64 as a CDK Docker image asset.
// Its Dockerfile copies the command server's esbuild bundle (dist/server.mjs), so the bundle is built
// here first, synchronously, whenever it is missing or older than the server's sources. Synth only
// stages the directory; Docker builds the image at deploy (cdk deploy / cdk-assets publish).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Stack } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { ContainerImage } from 'aws-cdk-lib/aws-ecs';
import type { Construct } from 'constructs';
import { PROJECT_ROOT } from './agent-function.ts';

/** The image's build context, relative to the repository root. */
export const SANDBOX_IMAGE_DIR = 'containers/sandbox';
export const SANDBOX_BUILD_SCRIPT = `${SANDBOX_IMAGE_DIR}/build.mjs`;
export const SANDBOX_SERVER_SOURCE = `${SANDBOX_IMAGE_DIR}/server.ts`;
export const SANDBOX_SERVER_BUNDLE = `${SANDBOX_IMAGE_DIR}/dist/server.mjs`;

export function sandboxImage(scope: Construct): ContainerImage {
  const directory = join(PROJECT_ROOT, SANDBOX_IMAGE_DIR);
  if (!existsSync(join(directory, 'Dockerfile'))) {
    throw new Error(`${SANDBOX_IMAGE_DIR}/Dockerfile not found: the sandbox image cannot be built without it`);
  }
  // Tests and the local cloud synthesize with bundling switched off; only a real synth builds.
  if (Stack.of(scope).bundlingRequired) buildServerBundle(scope);
  return ContainerImage.fromAsset(directory, { platform: Platform.LINUX_ARM64 });
}

function buildServerBundle(scope: Construct): void {
  const script = join(PROJECT_ROOT, SANDBOX_BUILD_SCRIPT);
  const bundle = join(PROJECT_ROOT, SANDBOX_SERVER_BUNDLE);
  if (!existsSync(script)) {
    Annotations.of(scope).addWarningV2(
      'threadwork:sandbox-build-script-missing',
      `${SANDBOX_BUILD_SCRIPT} does not exist, so ${SANDBOX_SERVER_BUNDLE} was not (re)built; the image build fails at deploy unless the bundle is there.`,
    );
    return;
  }
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newestSourceMtime()) return;

  const build = spawnSync(process.execPath, [script], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (build.error || build.status !== 0) {
    const output = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim();
    throw new Error(`${SANDBOX_BUILD_SCRIPT} failed (${build.error?.message ?? `exit ${build.status}`}): ${output}`);
  }
  if (!existsSync(bundle)) throw new Error(`${SANDBOX_BUILD_SCRIPT} succeeded but wrote no ${SANDBOX_SERVER_BUNDLE}`);
}

/** The latest modification time of server.ts and the TypeScript beside it (dist and node_modules excluded). */
function newestSourceMtime(): number {
  let newest = existsSync(join(PROJECT_ROOT, SANDBOX_SERVER_SOURCE)) ? statSync(join(PROJECT_ROOT, SANDBOX_SERVER_SOURCE)).mtimeMs : 0;
  const visit = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      if (entry.name === 'dist' || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const path = join(directory, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(join(PROJECT_ROOT, SANDBOX_IMAGE_DIR));
  return newest;
}
