// The stack's functions as the local Lambda runs them: each with the environment the template gives
// it (local values for what only exists in AWS), the shared local endpoints, its own credentials,
// and the network its VPC placement allows.
import { FUNCTION_ENTRIES, type FunctionRole } from '../../../../infra/function-entries.ts';
import type { LocalFunctionVersion } from '../lambda/runtime.ts';
import { workerNetwork } from '../lambda/network-policy.ts';
import { localPhysicalName, resolveCloudFormation } from '../resources.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
type Template = { Resources: Record<string, { Type: string; Properties?: any }> };

/** What a Lambda container has besides the function's own variables. */
const RUNTIME_VARIABLES = ['PATH', 'HOME', 'TZ', 'LANG', 'TMPDIR'];
/** What the default credential chain reads, for a local stack that calls a real Bedrock. */
const AMBIENT_CREDENTIAL_VARIABLES = [
  'AWS_PROFILE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
];

export interface FunctionEnvironmentInputs {
  template: Template;
  /** The functions the template has (the Teams webhook only where the stack serves Teams). */
  logicalIds: Partial<Record<FunctionRole, string>>;
  /** Endpoints, region and settings every function gets; they also override the template's values of the same name. */
  common: Record<string, string>;
  /** Local values for variables that name things only AWS has (queue URLs, cluster ARNs, ports). */
  localValues: Record<string, string>;
  /** Credentials each function signs with (by role); the ambient ones when undefined. */
  credentials: (role: FunctionRole) => { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Local ports standing in for the template's (the sandbox server's). */
  localPorts?: Record<number, number>;
}

function pick(names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]!]])));
}

export function functionVersions(inputs: FunctionEnvironmentInputs): Partial<Record<FunctionRole, LocalFunctionVersion>> {
  const { template, logicalIds } = inputs;
  const entries = (Object.entries(FUNCTION_ENTRIES) as [FunctionRole, string][]).filter(([role]) => inputs.logicalIds[role]);
  return Object.fromEntries(
    entries.map(([role, entry]) => {
      const logicalId = logicalIds[role]!;
      const functionId = localPhysicalName(template, logicalId);
      const resource = template.Resources[logicalId];
      const variables = (resolveCloudFormation(template, resource?.Properties?.Environment?.Variables ?? {}) ?? {}) as Record<
        string,
        unknown
      >;
      const own: Record<string, string> = {};
      for (const [name, value] of Object.entries(variables)) {
        own[name] = inputs.localValues[name] ?? inputs.common[name] ?? String(value);
      }
      const credentials = inputs.credentials(role);
      const env: Record<string, string> = {
        ...pick(RUNTIME_VARIABLES),
        ...(credentials ? {} : pick(AMBIENT_CREDENTIAL_VARIABLES)),
        AWS_LAMBDA_FUNCTION_NAME: functionId,
        ...inputs.common,
        ...own,
        ...(credentials ? { AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey } : {}),
      };
      const version: LocalFunctionVersion = {
        functionId,
        entry,
        env,
        variables: own,
        network: workerNetwork(template, logicalId, env, inputs.localPorts),
      };
      return [role, version];
    }),
  ) as Partial<Record<FunctionRole, LocalFunctionVersion>>;
}
