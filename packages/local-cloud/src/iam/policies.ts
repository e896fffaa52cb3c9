// Each IAM role's identity policies, read from the template as IAM would hold them after the deploy:
// the role's inline Policies, every AWS::IAM::Policy and stack-local AWS::IAM::ManagedPolicy
// attached to it, with every intrinsic resolved to the local ARN CloudFormation would put there.
import { LOCAL_PARTITION, type CfnTemplate } from '../template.ts';
import { localGetAtt, localPhysicalName, resolveCloudFormation } from '../resources.ts';

export interface IdentityPolicy {
  /** Where it comes from: `<RoleId>/<PolicyName>` (inline) or the policy resource's logical id. */
  name: string;
  policy: { Version?: string; Statement: unknown };
}

export interface RolePolicies {
  logicalId: string;
  name: string;
  arn: string;
  policies: IdentityPolicy[];
  /** AWS managed policies (arn:aws:iam::aws:policy/...): their documents are not in the template. */
  awsManagedPolicyArns: string[];
}

const ROLE = 'AWS::IAM::Role';
const POLICY_TYPES = new Set(['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']);
const AWS_MANAGED = `arn:${LOCAL_PARTITION}:iam::aws:policy/`;

interface PolicyProperties {
  PolicyName?: unknown;
  PolicyDocument?: unknown;
  Roles?: unknown[];
}

export function rolePolicies(template: object): Map<string, RolePolicies> {
  const cfn = template as CfnTemplate;
  const resources = Object.entries(cfn.Resources ?? {});
  const resolve = (value: unknown) => resolveCloudFormation(cfn, value);
  const roles = new Map<string, RolePolicies>();
  const byName = new Map<string, RolePolicies>();
  for (const [logicalId, resource] of resources) {
    if (resource.Type !== ROLE) continue;
    const properties = resource.Properties ?? {};
    const inline = ((properties.Policies ?? []) as PolicyProperties[]).map((policy) => ({
      name: `${logicalId}/${String(resolve(policy.PolicyName))}`,
      policy: resolve(policy.PolicyDocument) as IdentityPolicy['policy'],
    }));
    const role: RolePolicies = {
      logicalId,
      name: localPhysicalName(cfn, logicalId),
      arn: localGetAtt(cfn, logicalId, 'Arn'),
      policies: inline,
      awsManagedPolicyArns: [],
    };
    for (const arn of (resolve(properties.ManagedPolicyArns ?? []) as unknown[]).map(String)) {
      if (arn.startsWith(AWS_MANAGED)) role.awsManagedPolicyArns.push(arn);
      else role.policies.push(stackManagedPolicy(cfn, arn));
    }
    roles.set(logicalId, role);
    byName.set(role.name, role);
  }
  // AWS::IAM::Policy (and ManagedPolicy) name their roles in Roles: a Ref yields the role's name.
  for (const [logicalId, resource] of resources) {
    if (!POLICY_TYPES.has(resource.Type)) continue;
    const properties = (resource.Properties ?? {}) as PolicyProperties;
    for (const roleName of (resolve(properties.Roles ?? []) as unknown[]).map(String)) {
      const role = byName.get(roleName);
      if (!role) throw new Error(`${logicalId} is attached to role ${roleName}, which the template does not define`);
      if (role.policies.some((policy) => policy.name === logicalId)) continue;
      role.policies.push({ name: logicalId, policy: resolve(properties.PolicyDocument) as IdentityPolicy['policy'] });
    }
  }
  return roles;
}

// A ManagedPolicyArns entry that is not AWS's must be a policy of this stack (Ref to it).
function stackManagedPolicy(template: CfnTemplate, arn: string): IdentityPolicy {
  for (const [logicalId, resource] of Object.entries(template.Resources ?? {})) {
    if (resource.Type === 'AWS::IAM::ManagedPolicy' && resolveCloudFormation(template, { Ref: logicalId }) === arn) {
      return { name: logicalId, policy: resolveCloudFormation(template, resource.Properties?.PolicyDocument) as IdentityPolicy['policy'] };
    }
  }
  throw new Error(`Managed policy ${arn} is neither AWS's nor defined in the template`);
}

/** Why a role cannot be evaluated locally, or undefined when it can. */
export function unevaluableReason(role: RolePolicies): string | undefined {
  if (role.awsManagedPolicyArns.length === 0) return undefined;
  return `Role ${role.logicalId} attaches AWS managed policies (${role.awsManagedPolicyArns.join(', ')}), whose documents the local IAM does not have`;
}
