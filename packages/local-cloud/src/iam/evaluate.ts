// Evaluates one authorization against a role's identity policies with iam-simulate, the way IAM
// decides a same-account request: allowed only when a statement allows it and none denies it.
// @cloud-copilot/iam-simulate is AGPL-3.0: it is a devDependency, used by the local cloud and the
// tests only, and never bundled into a Lambda function.
import { runSimulation, runUnsafeSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import { LOCAL_ACCOUNT, LOCAL_REGION } from '../template.ts';
import type { IdentityPolicy, RolePolicies } from './policies.ts';
import type { Authorization } from './requests.ts';
import { resourceTypesOf } from './service-reference.ts';
import { keepCollators } from './collation.ts';

export interface Decision {
  allowed: boolean;
  /** Denied by a Deny statement, not for want of an Allow. */
  explicitDeny?: boolean;
  /** AWS's wording: "User: <principal> is not authorized to perform: <action> on resource: <arn> because …". */
  message: string;
  principal: string;
  action: string;
  resource: string;
}

export interface RoleSession {
  role: RolePolicies;
  /** The assumed-role session ARN AWS names in its messages: arn:aws:sts::<account>:assumed-role/<role>/<session>. */
  principalArn: string;
}

// Keys AWS puts in every request's context. Time keys are left out: they would defeat the cache,
// and the stack's policies use none.
function globalContext(session: RoleSession): Record<string, string> {
  return {
    'aws:PrincipalArn': session.role.arn,
    'aws:PrincipalAccount': LOCAL_ACCOUNT,
    'aws:PrincipalType': 'AssumedRole',
    'aws:RequestedRegion': LOCAL_REGION,
    'aws:SecureTransport': 'true',
  };
}

// A global inference profile's foundation model is authorized Region-less
// (arn:aws:bedrock:::foundation-model/…), an ARN iam-data's resource patterns do not accept; the
// simulation then runs unvalidated (the policies themselves were validated by the other requests).
const REGIONLESS_FOUNDATION_MODEL = /^arn:[^:]+:bedrock:::foundation-model\//;

export function denialMessage(principal: string, action: string, resource: string, explicit: boolean): string {
  const reason = explicit
    ? 'with an explicit deny in an identity-based policy'
    : `because no identity-based policy allows the ${action} action`;
  return `User: ${principal} is not authorized to perform: ${action} on resource: ${resource} ${reason}`;
}

/**
 * Whether a policy's resource pattern matches the request resource "*" itself, as IAM compares them:
 * `*` and `?` are wildcards, `${*}`, `${?}` and `${$}` literal characters; any other policy variable
 * names a value of the request, which "*" is not.
 */
function matchesLiteralWildcard(pattern: string): boolean {
  const regex = pattern.replace(/\$\{([^}]*)\}|\*|\?|[^$*?]+|\$/g, (token, variable: string | undefined) => {
    if (variable !== undefined) return ['*', '?', '$'].includes(variable) ? `\\${variable}` : '(?!)';
    if (token === '*') return '.*';
    if (token === '?') return '.';
    return token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${regex}$`, 's').test('*');
}

type Statement = Record<string, unknown>;

/**
 * The statements that apply to a request on "*" itself, each with Resource "*": a Resource element
 * applies when one of its patterns matches "*", a NotResource element when none does.
 */
function policiesOnLiteralWildcard(policies: IdentityPolicy[]): IdentityPolicy[] {
  const patterns = (value: unknown) => [value].flat().map(String);
  return policies.flatMap(({ name, policy }) => {
    const statements = [policy.Statement].flat() as Statement[];
    const applying = statements.flatMap((statement): Statement[] => {
      const { Resource, NotResource, ...rest } = statement;
      if (Resource !== undefined) return patterns(Resource).some(matchesLiteralWildcard) ? [{ ...rest, Resource: '*' }] : [];
      if (NotResource !== undefined) return patterns(NotResource).some(matchesLiteralWildcard) ? [] : [{ ...rest, Resource: '*' }];
      return [statement];
    });
    return applying.length > 0 ? [{ name, policy: { ...policy, Statement: applying } }] : [];
  });
}

export class PolicyEvaluator {
  private readonly cache = new Map<string, Promise<Decision>>();

  /**
   * `resourcePolicies`: resource ARN → its policy, for the resources whose own policy AWS reads with
   * the caller's (a KMS key's key policy: without one that trusts the account, no IAM policy allows
   * a use of the key).
   */
  constructor(private readonly resourcePolicies: ReadonlyMap<string, object> = new Map()) {
    keepCollators();
  }

  evaluate(session: RoleSession, authorization: Authorization): Promise<Decision> {
    const context = { ...globalContext(session), ...authorization.context };
    const key = JSON.stringify([session.principalArn, authorization.action, authorization.resource, Object.entries(context).sort()]);
    let decision = this.cache.get(key);
    if (!decision) {
      decision = this.simulate(session, authorization, context);
      // A failed simulation is a bug to fix, not a decision to remember.
      decision.catch(() => this.cache.delete(key));
      this.cache.set(key, decision);
    }
    return decision;
  }

  private async simulate(session: RoleSession, { action, resource }: Authorization, context: Record<string, string | string[]>) {
    // iam-simulate reads a "*" request of an action that has resource types as "any of them", which
    // a policy naming one resource allows; AWS compares the policy's patterns with the string "*".
    const literal = resource === '*' && resourceTypesOf(action).length > 0;
    const simulation: Simulation = {
      identityPolicies: literal ? policiesOnLiteralWildcard(session.role.policies) : session.role.policies,
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: { principal: session.principalArn, action, resource: { resource, accountId: LOCAL_ACCOUNT }, contextVariables: context },
      ...(this.resourcePolicies.has(resource) ? { resourcePolicy: this.resourcePolicies.get(resource) } : {}),
    };
    const outcome = await runSimulation(simulation, {});
    let result: string;
    if (outcome.resultType !== 'error') result = outcome.overallResult;
    else if (outcome.errors.message === 'no.resource.types' && REGIONLESS_FOUNDATION_MODEL.test(resource)) {
      result = runUnsafeSimulation(simulation, {});
    } else {
      throw new Error(`IAM cannot evaluate ${action} on ${resource} for ${session.role.logicalId}: ${JSON.stringify(outcome.errors)}`);
    }
    const allowed = result === 'Allowed';
    const message = allowed
      ? `User: ${session.principalArn} is authorized to perform: ${action} on resource: ${resource}`
      : denialMessage(session.principalArn, action, resource, result === 'ExplicitlyDenied');
    return { allowed, explicitDeny: result === 'ExplicitlyDenied', message, principal: session.principalArn, action, resource };
  }
}
