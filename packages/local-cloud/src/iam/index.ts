// The local cloud's IAM: every role of the template with its identity policies, an access key per
// role (so each function's SDK clients sign as its role), and the decision IAM would take on each
// request. Keys the local IAM did not issue are the operator's (the local cloud's own admin
// clients), allowed everything.
import { createHash } from 'node:crypto';
import { type CfnTemplate, LOCAL_ACCOUNT } from '../template.ts';
import { localGetAtt, localPhysicalName, resolveCloudFormation } from '../resources.ts';
import { PolicyEvaluator, type Decision, type RoleSession } from './evaluate.ts';
import { rolePolicies, unevaluableReason } from './policies.ts';
import { type Authorization, type AwsHttpRequest, type StackFacts, authorizationsFor } from './requests.ts';
import { bucketArn } from './map-s3.ts';

export { deniedResponse, type DeniedResponse } from './denials.ts';
export type { Decision } from './evaluate.ts';
export {
  authorizationsFor,
  signingOf,
  UnknownOperationError,
  type Authorization,
  type AwsHttpRequest,
  type StackFacts,
} from './requests.ts';
export { bucketArn } from './map-s3.ts';

export type Principal = { role: string } | 'operator';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface LocalIam {
  /** Every role of the template: logical id → role ARN. */
  roles: Map<string, string>;
  /** Roles the local IAM cannot evaluate (AWS managed policies): authorizing as one of them throws this reason. */
  errors: string[];
  /** The role a resource runs as: a function's Role, a state machine's RoleArn, a task definition's TaskRoleArn. */
  roleOf(resourceLogicalId: string): string | undefined;
  accessKeyFor(roleLogicalId: string): Credentials;
  principalOf(accessKeyId?: string): Principal;
  authorize(principal: Principal, authorization: Authorization): Promise<Decision>;
  /** Every authorization the request needs: the first denial, or else the last allowance. */
  authorizeRequest(principal: Principal, request: AwsHttpRequest): Promise<Decision>;
  /**
   * S3 answers a GET/HEAD of a missing key with 404 only to whom may list the bucket; to anyone
   * else with 403 AccessDenied, so a missing key does not reveal that it is missing.
   */
  missingKeyStatus(principal: Principal, bucket: string): Promise<403 | 404>;
  /** What the request mappers need from the template (the roles a task definition passes). */
  stackFacts: StackFacts;
}

const ROLE_PROPERTIES = ['Role', 'RoleArn', 'TaskRoleArn'];

// Keys are derived from the role's logical id: stable across restarts, distinct per role.
function credentialsFor(roleLogicalId: string): Credentials {
  const hash = createHash('sha256').update(`threadwork-local-iam/${roleLogicalId}`).digest('hex');
  return { accessKeyId: `ASIA${hash.slice(0, 16).toUpperCase()}`, secretAccessKey: hash.slice(16, 56) };
}

export function createLocalIam(template: object): LocalIam {
  const cfn = template as CfnTemplate;
  const policies = rolePolicies(cfn);
  const byArn = new Map([...policies.values()].map((role) => [role.arn, role.logicalId]));
  const resources = Object.entries(cfn.Resources ?? {});
  const roleOfResource = new Map<string, string>();
  for (const [logicalId, resource] of resources) {
    const property = ROLE_PROPERTIES.find((name) => resource.Properties?.[name] !== undefined);
    const role = property && byArn.get(String(resolveCloudFormation(cfn, resource.Properties?.[property])));
    if (role) roleOfResource.set(logicalId, role);
  }
  // A Lambda function's session is named after the function; a role no single function uses, after itself.
  const sessions = new Map<string, RoleSession>();
  for (const role of policies.values()) {
    const users = resources.filter(([id, r]) => r.Type === 'AWS::Lambda::Function' && roleOfResource.get(id) === role.logicalId);
    const session = users.length === 1 && users[0] ? localPhysicalName(cfn, users[0][0]) : role.name;
    sessions.set(role.logicalId, { role, principalArn: `arn:aws:sts::${LOCAL_ACCOUNT}:assumed-role/${role.name}/${session}` });
  }
  const keys = new Map([...policies.keys()].map((roleId) => [credentialsFor(roleId).accessKeyId, roleId]));
  const taskDefinitionRoles = new Map<string, string[]>();
  const latestTaskDefinitions = new Map<string, string>();
  for (const [logicalId, resource] of resources) {
    if (resource.Type !== 'AWS::ECS::TaskDefinition') continue;
    const roles = ['TaskRoleArn', 'ExecutionRoleArn'].flatMap((name) => {
      const value = resource.Properties?.[name];
      return value === undefined ? [] : [String(resolveCloudFormation(cfn, value))];
    });
    const arn = String(resolveCloudFormation(cfn, { Ref: logicalId }));
    taskDefinitionRoles.set(arn, roles);
    // CloudFormation deregisters the revision it replaces: the template's is the family's latest ACTIVE one.
    latestTaskDefinitions.set(localPhysicalName(cfn, logicalId), arn);
  }
  const stackFacts: StackFacts = {
    taskDefinitionRoles: (arn) => taskDefinitionRoles.get(arn) ?? [],
    latestTaskDefinition: (family) => latestTaskDefinitions.get(family),
  };
  // KMS reads a key's key policy with the caller's policies (CDK's default trusts the account's IAM).
  const keyPolicies = new Map(
    resources
      .filter(([, resource]) => resource.Type === 'AWS::KMS::Key')
      .map(([logicalId, resource]) => [
        localGetAtt(cfn, logicalId, 'Arn'),
        resolveCloudFormation(cfn, resource.Properties?.KeyPolicy ?? {}) as object,
      ]),
  );
  const evaluator = new PolicyEvaluator(keyPolicies);

  const authorize = async (principal: Principal, authorization: Authorization): Promise<Decision> => {
    if (principal === 'operator') return { allowed: true, message: 'the operator', principal: 'operator', ...authorization };
    const session = sessions.get(principal.role);
    if (!session) throw new Error(`No role ${principal.role} in the template`);
    const reason = unevaluableReason(session.role);
    if (reason) throw new Error(reason);
    return evaluator.evaluate(session, authorization);
  };

  return {
    roles: new Map([...policies.values()].map((role) => [role.logicalId, role.arn])),
    errors: [...policies.values()].flatMap((role) => unevaluableReason(role) ?? []),
    roleOf: (logicalId) => roleOfResource.get(logicalId),
    accessKeyFor(roleLogicalId) {
      if (!policies.has(roleLogicalId)) throw new Error(`No role ${roleLogicalId} in the template`);
      return credentialsFor(roleLogicalId);
    },
    principalOf(accessKeyId) {
      const role = accessKeyId === undefined ? undefined : keys.get(accessKeyId);
      return role ? { role } : 'operator';
    },
    authorize,
    async authorizeRequest(principal, request) {
      // A request that names nothing to authorize (an empty batch) is the service's to refuse.
      let decision: Decision = { allowed: true, message: 'nothing to authorize', principal: String(principal), action: '', resource: '' };
      for (const authorization of authorizationsFor(request, stackFacts)) {
        decision = await authorize(principal, authorization);
        if (!decision.allowed) return decision;
      }
      return decision;
    },
    async missingKeyStatus(principal, bucket) {
      const resource = bucket.startsWith('arn:') ? bucket : bucketArn(bucket);
      return (await authorize(principal, { action: 's3:ListBucket', resource })).allowed ? 404 : 403;
    },
    stackFacts,
  };
}
