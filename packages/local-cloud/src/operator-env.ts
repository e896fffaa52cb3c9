// How the operator's tools reach the local stack as a deployed one: the stack's name and the
// variables of the standard AWS chain that reach it (endpoints, Region, a key the local IAM treats as
// the operator's). `npm start` writes them into .local/stack.json (stack-file.ts); `npm run ops` and
// `doctor -- --local` put them in their environment and then take the same path as against AWS.
import type { LocalCloud } from './cloud.ts';

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
