// How the operator's tools find the local stack: `npm start` writes the stack's name and the
// variables of the standard AWS chain that reach it (endpoints, Region, a key the local IAM treats as
// the operator's) to .local/stack.json, and `npm run ops` without --stack reads them. Against the
// local stack the tools then take the same path as against a deployed one.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalCloud } from './cloud.ts';

export const LOCAL_STACK_FILE = fileURLToPath(new URL('../../../.local/stack.json', import.meta.url));

export interface OperatorEnv {
  stackName: string;
  /** AWS_REGION, AWS_ENDPOINT_URL_<SERVICE>, AWS_S3_FORCE_PATH_STYLE and the operator's key. */
  env: Record<string, string>;
}

export function operatorEnvOf(cloud: Pick<LocalCloud, 'env' | 'deployment'>): OperatorEnv {
  const shared = Object.entries(cloud.env).filter(([key]) => /^AWS_(REGION|ENDPOINT_URL_\w+|S3_FORCE_PATH_STYLE)$/.test(key));
  return {
    stackName: cloud.deployment.stackName,
    env: {
      ...Object.fromEntries(shared),
      ...cloud.deployment.variables,
      // Keys the local IAM did not issue are the operator's.
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    },
  };
}

export function writeOperatorEnv(operator: OperatorEnv, path = LOCAL_STACK_FILE): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(operator, null, 2)}\n`);
}

export function removeOperatorEnv(path = LOCAL_STACK_FILE): void {
  rmSync(path, { force: true });
}

export function readOperatorEnv(path = LOCAL_STACK_FILE): OperatorEnv {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new Error('No local stack is running (start it with `npm start`), or name a deployed stack with --stack NAME.');
  }
  return JSON.parse(text) as OperatorEnv;
}
