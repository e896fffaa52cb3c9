// The synthesized CloudFormation template, resolved for one machine: what CloudFormation would
// resolve at deploy time (ARNs, names, the state machine's ASL) gets local values, so the local
// cloud can wire the stand-ins from the template itself.
import { isPlainObject } from './aws-protocol.ts';

export const LOCAL_PARTITION = 'aws';
export const LOCAL_REGION = 'local';
export const LOCAL_ACCOUNT = '000000000000';

export function localFunctionArn(functionLogicalId: string): string {
  return `arn:${LOCAL_PARTITION}:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${functionLogicalId}`;
}

export function localStateMachineArn(stateMachineLogicalId: string): string {
  return `arn:${LOCAL_PARTITION}:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${stateMachineLogicalId}`;
}

/** The function name in a Lambda function ARN (qualifier dropped); locally that is its logical id. */
export function functionLogicalIdFromArn(arn: string): string | undefined {
  const match = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)(?::[^:]+)?$/.exec(arn);
  return match?.[1];
}

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface CfnTemplate {
  Resources?: Record<string, TemplateResource>;
}

const STATE_MACHINE_TYPE = 'AWS::StepFunctions::StateMachine';
const LAMBDA_TYPES = new Set(['AWS::Lambda::Function', 'AWS::Lambda::Version', 'AWS::Lambda::Alias']);

/** The stack's name locally: synthesizeLocalStack's stack id (cloud/synth.ts). */
export const LOCAL_STACK_NAME = 'Threadwork';

/** Pseudo parameters, as CloudFormation would resolve them in the local region and account. */
export const PSEUDO_PARAMETERS: Record<string, string> = {
  'AWS::Partition': LOCAL_PARTITION,
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': LOCAL_STACK_NAME,
};

/** The state machine's ASL (DefinitionString, as CDK emits it), resolved. */
export function definitionFromTemplate(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any CloudFormation template JSON
  template: any,
  stateMachineLogicalId?: string,
): { definition: object; stateMachineLogicalId: string } {
  const cfn = template as CfnTemplate;
  const logicalId = stateMachineLogicalId ?? onlyStateMachineId(cfn);
  const resource = cfn.Resources?.[logicalId];
  if (resource?.Type !== STATE_MACHINE_TYPE) {
    throw new Error(`No ${STATE_MACHINE_TYPE} with logical id ${logicalId} in the template`);
  }
  const definition = JSON.parse(String(resolveIntrinsics(cfn, resource.Properties?.DefinitionString))) as object;
  return { definition, stateMachineLogicalId: logicalId };
}

function onlyStateMachineId(template: CfnTemplate): string {
  const ids = Object.entries(template.Resources ?? {})
    .filter(([, resource]) => resource.Type === STATE_MACHINE_TYPE)
    .map(([id]) => id);
  if (ids.length !== 1 || ids[0] === undefined) {
    throw new Error(`Expected exactly one ${STATE_MACHINE_TYPE} in the template, found ${ids.length}: pass its logical id`);
  }
  return ids[0];
}

/**
 * Resolves the CloudFormation intrinsics the stack's wiring uses (Ref, Fn::GetAtt, Fn::Join) to
 * local values: Lambda functions/versions/aliases → local function ARN, tables → their name, state
 * machines → local ARN, anything else → a `local-<LogicalId>` placeholder.
 * The local cloud's wiring relies on these shortcuts; what CloudFormation itself would yield (for
 * IAM policies) is resolveCloudFormation's, in resources.ts.
 */
export function resolveIntrinsics(template: object, value: unknown): unknown {
  return resolveWith({ ref: resolveRef, getAtt: resolveGetAtt }, template as CfnTemplate, value);
}

/** How Ref and Fn::GetAtt resolve; the other intrinsics are the same for every resolution. */
export interface IntrinsicResolver {
  ref(template: CfnTemplate, logicalId: string): unknown;
  getAtt(template: CfnTemplate, logicalId: string, attribute: string): unknown;
}

export function resolveWith(resolver: IntrinsicResolver, template: CfnTemplate, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveWith(resolver, template, item));
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  const [onlyKey] = keys;
  if (keys.length === 1 && onlyKey !== undefined && (onlyKey === 'Ref' || onlyKey.startsWith('Fn::'))) {
    return resolveIntrinsic(resolver, template, onlyKey, value[onlyKey]);
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveWith(resolver, template, item)]));
}

function resolveIntrinsic(resolver: IntrinsicResolver, template: CfnTemplate, intrinsic: string, argument: unknown): unknown {
  const resolve = (value: unknown) => resolveWith(resolver, template, value);
  switch (intrinsic) {
    case 'Ref':
      return resolver.ref(template, String(argument));
    case 'Fn::GetAtt': {
      const [logicalId, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
      return resolver.getAtt(template, String(logicalId), String(resolve(attribute)));
    }
    case 'Fn::Join': {
      const [separator, parts] = argument as [string, unknown[]];
      return (resolve(parts) as unknown[]).map(String).join(separator);
    }
    case 'Fn::Sub':
      return substitute(resolver, template, argument);
    case 'Fn::Select': {
      const [index, list] = resolve(argument) as [unknown, unknown[]];
      const item = list[Number(index)];
      if (item === undefined) throw new Error(`Fn::Select index ${String(index)} is out of range`);
      return item;
    }
    case 'Fn::Split': {
      const [separator, text] = resolve(argument) as [string, unknown];
      return String(text).split(separator);
    }
    default:
      throw new Error(`Unsupported intrinsic ${intrinsic} in the template`);
  }
}

// Fn::Sub: "${Name}" is a pseudo parameter, a variable of the second form, or a Ref; "${Id.Attr}"
// a GetAtt; "${!Literal}" stays "${Literal}".
function substitute(resolver: IntrinsicResolver, template: CfnTemplate, argument: unknown): string {
  const [text, variables] = Array.isArray(argument) ? (argument as [string, Record<string, unknown>?]) : [String(argument), undefined];
  const values = (resolveWith(resolver, template, variables ?? {}) ?? {}) as Record<string, unknown>;
  return text.replace(/\$\{([^}]*)\}/g, (_match, name: string) => {
    if (name.startsWith('!')) return `\${${name.slice(1)}}`;
    if (Object.hasOwn(values, name)) return String(values[name]);
    const dot = name.indexOf('.');
    if (dot > 0 && !name.startsWith('AWS::')) return String(resolver.getAtt(template, name.slice(0, dot), name.slice(dot + 1)));
    return String(resolver.ref(template, name));
  });
}

function resolveRef(template: CfnTemplate, logicalId: string): unknown {
  const pseudo = PSEUDO_PARAMETERS[logicalId];
  if (pseudo !== undefined) return pseudo;
  const resource = requireResource(template, logicalId);
  if (LAMBDA_TYPES.has(resource.Type)) return localFunctionArn(functionLogicalIdOf(template, logicalId));
  if (resource.Type === 'AWS::DynamoDB::Table') return tableName(resource, logicalId);
  if (resource.Type === STATE_MACHINE_TYPE) return localStateMachineArn(logicalId);
  return `local-${logicalId}`;
}

function resolveGetAtt(template: CfnTemplate, logicalId: string, attribute: string): unknown {
  const resource = requireResource(template, logicalId);
  if (LAMBDA_TYPES.has(resource.Type) && attribute === 'Arn') return localFunctionArn(functionLogicalIdOf(template, logicalId));
  return `local-${logicalId}.${attribute}`;
}

export function requireResource(template: CfnTemplate, logicalId: string): TemplateResource {
  const resource = template.Resources?.[logicalId];
  if (!resource) throw new Error(`The template refers to ${logicalId}, which it does not define`);
  return resource;
}

function tableName(resource: TemplateResource, logicalId: string): string {
  const name = resource.Properties?.TableName;
  return typeof name === 'string' ? name : `local-${logicalId}`;
}

// A version or alias names its function in FunctionName (a Ref/GetAtt to the function): locally
// every one of them invokes the function's own handler.
function functionLogicalIdOf(template: CfnTemplate, logicalId: string): string {
  const resource = requireResource(template, logicalId);
  if (resource.Type === 'AWS::Lambda::Function') return logicalId;
  const functionName = String(resolveIntrinsics(template, resource.Properties?.FunctionName));
  return functionLogicalIdFromArn(functionName) ?? functionName;
}
