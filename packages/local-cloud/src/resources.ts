// What CloudFormation would make of the stack's resources, in the local region and account: each
// resource's physical name (so the local cloud creates its resources under exactly these names) and
// what Ref and Fn::GetAtt of it yield. resolveCloudFormation resolves a template value with them,
// as IAM policies need: a policy that names the wrong ARN must not match locally either.
import { createHash } from 'node:crypto';
import {
  type CfnTemplate,
  LOCAL_ACCOUNT,
  LOCAL_PARTITION,
  LOCAL_REGION,
  PSEUDO_PARAMETERS,
  localFunctionArn,
  localStateMachineArn,
  requireResource,
  resolveWith,
} from './template.ts';

export function localArn(service: string, resource: string, region = LOCAL_REGION, account = LOCAL_ACCOUNT): string {
  return `arn:${LOCAL_PARTITION}:${service}:${region}:${account}:${resource}`;
}

function digest(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/**
 * A secret's ARN ends in "-" and six random characters; locally they are derived from the name, so
 * a SecretId given by name maps to the same ARN without the template.
 */
export function localSecretArn(name: string): string {
  return localArn('secretsmanager', `secret:${name}-${digest(name, 6)}`);
}

export function localQueueArn(name: string): string {
  return localArn('sqs', name);
}

export function localQueueUrl(name: string): string {
  return `https://sqs.${LOCAL_REGION}.${PSEUDO_PARAMETERS['AWS::URLSuffix']}/${LOCAL_ACCOUNT}/${name}`;
}

export function localRoleArn(name: string, path = '/'): string {
  return `arn:${LOCAL_PARTITION}:iam::${LOCAL_ACCOUNT}:role${path}${name}`;
}

// CloudFormation generates a name when the template gives none; locally it is `local-<LogicalId>`,
// shortened with a digest where the service limits a name's length.
function generatedName(logicalId: string, maxLength: number): string {
  const name = `local-${logicalId}`;
  return name.length <= maxLength ? name : `${name.slice(0, maxLength - 7)}-${digest(name, 6)}`;
}

type NameRule = { property: string; maxLength: number; lowercase?: boolean; generated?: (logicalId: string) => string };

// Lambda functions and state machines keep their logical id as generated name: that is the name in
// localFunctionArn and localStateMachineArn, which the local cloud's wiring already uses.
const NAME_RULES: Record<string, NameRule> = {
  'AWS::DynamoDB::Table': { property: 'TableName', maxLength: 255 },
  'AWS::S3::Bucket': { property: 'BucketName', maxLength: 63, lowercase: true },
  'AWS::SQS::Queue': { property: 'QueueName', maxLength: 75 },
  'AWS::StepFunctions::StateMachine': { property: 'StateMachineName', maxLength: 80, generated: (id) => id },
  'AWS::Lambda::Function': { property: 'FunctionName', maxLength: 64, generated: (id) => id },
  'AWS::ECS::Cluster': { property: 'ClusterName', maxLength: 255 },
  'AWS::ECS::TaskDefinition': { property: 'Family', maxLength: 255 },
  'AWS::SecretsManager::Secret': { property: 'Name', maxLength: 512 },
  'AWS::Events::EventBus': { property: 'Name', maxLength: 256 },
  'AWS::Events::Rule': { property: 'Name', maxLength: 64 },
  'AWS::Scheduler::ScheduleGroup': { property: 'Name', maxLength: 64 },
  'AWS::Scheduler::Schedule': { property: 'Name', maxLength: 64 },
  'AWS::IAM::Role': { property: 'RoleName', maxLength: 64 },
  'AWS::IAM::ManagedPolicy': { property: 'ManagedPolicyName', maxLength: 128 },
  'AWS::Logs::LogGroup': { property: 'LogGroupName', maxLength: 512 },
  'AWS::ECR::Repository': { property: 'RepositoryName', maxLength: 256, lowercase: true },
  'AWS::CodeBuild::Project': { property: 'Name', maxLength: 150 },
  'AWS::SNS::Topic': { property: 'TopicName', maxLength: 256 },
  'AWS::CloudWatch::Alarm': { property: 'AlarmName', maxLength: 255 },
  'AWS::CloudWatch::Dashboard': { property: 'DashboardName', maxLength: 255 },
};

/**
 * The name the resource has in the local cloud: the template's own name property (resolved), or a
 * generated one. A FIFO queue's name ends in `.fifo`, as SQS requires.
 */
export function localPhysicalName(template: object, logicalId: string): string {
  const cfn = template as CfnTemplate;
  const resource = requireResource(cfn, logicalId);
  const rule = NAME_RULES[resource.Type];
  if (!rule) throw new Error(`No local physical name for ${logicalId} (${resource.Type})`);
  const given = resource.Properties?.[rule.property];
  if (given !== undefined) return String(resolveCloudFormation(cfn, given));
  const generated = rule.generated?.(logicalId) ?? generatedName(logicalId, rule.maxLength);
  const name = rule.lowercase ? generated.toLowerCase() : generated;
  const fifo = resource.Properties?.FifoQueue;
  return resource.Type === 'AWS::SQS::Queue' && (fifo === true || fifo === 'true') ? `${name}.fifo` : name;
}

type Values = { ref: () => string; attributes: Record<string, () => string> };

// EC2 ids: a resource-type prefix and 17 hex digits, derived from the logical id.
const EC2_ID_PREFIXES: Record<string, string> = {
  'AWS::EC2::VPC': 'vpc',
  'AWS::EC2::Subnet': 'subnet',
  'AWS::EC2::SecurityGroup': 'sg',
  'AWS::EC2::RouteTable': 'rtb',
  'AWS::EC2::VPCEndpoint': 'vpce',
  'AWS::EC2::InternetGateway': 'igw',
  'AWS::EC2::NatGateway': 'nat',
  'AWS::EC2::NetworkAcl': 'acl',
};

function ec2Id(prefix: string, seed: string): string {
  return `${prefix}-${digest(seed, 17)}`;
}

function valuesOf(template: CfnTemplate, logicalId: string): Values {
  const resource = requireResource(template, logicalId);
  const properties = resource.Properties ?? {};
  const name = () => localPhysicalName(template, logicalId);
  const resolve = (value: unknown) => String(resolveCloudFormation(template, value));
  switch (resource.Type) {
    case 'AWS::DynamoDB::Table': {
      const arn = () => localArn('dynamodb', `table/${name()}`);
      // The stream's label is the time it was enabled; locally the epoch.
      return { ref: name, attributes: { Arn: arn, StreamArn: () => `${arn()}/stream/1970-01-01T00:00:00.000` } };
    }
    case 'AWS::S3::Bucket':
      return {
        ref: name,
        attributes: {
          Arn: () => `arn:${LOCAL_PARTITION}:s3:::${name()}`,
          DomainName: () => `${name()}.s3.amazonaws.com`,
          RegionalDomainName: () => `${name()}.s3.${LOCAL_REGION}.amazonaws.com`,
        },
      };
    case 'AWS::SQS::Queue':
      return {
        ref: () => localQueueUrl(name()),
        attributes: { Arn: () => localQueueArn(name()), QueueName: name, QueueUrl: () => localQueueUrl(name()) },
      };
    case 'AWS::StepFunctions::StateMachine':
      return { ref: () => localStateMachineArn(name()), attributes: { Arn: () => localStateMachineArn(name()), Name: name } };
    case 'AWS::Lambda::Function':
      return { ref: name, attributes: { Arn: () => localFunctionArn(name()) } };
    case 'AWS::Lambda::Version':
    case 'AWS::Lambda::Alias': {
      // A version's or an alias's ARN is its function's, qualified by the version number or alias name.
      const qualifier = () =>
        resource.Type === 'AWS::Lambda::Alias' ? resolve(properties.Name) : String(versionNumber(template, logicalId));
      const functionName = () => resolve(properties.FunctionName);
      const arn = () => `${functionName().startsWith('arn:') ? functionName() : localFunctionArn(functionName())}:${qualifier()}`;
      return { ref: arn, attributes: { Version: qualifier, FunctionArn: arn, AliasArn: arn } };
    }
    case 'AWS::ECS::Cluster':
      return { ref: name, attributes: { Arn: () => localArn('ecs', `cluster/${name()}`) } };
    case 'AWS::ECS::TaskDefinition': {
      // The revision a deploy registered (see LOCAL_REVISION_PROPERTY); a family's first is revision 1.
      const revision = () => (typeof properties[LOCAL_REVISION_PROPERTY] === 'number' ? properties[LOCAL_REVISION_PROPERTY] : 1);
      const arn = () => localArn('ecs', `task-definition/${name()}:${revision()}`);
      return { ref: arn, attributes: { TaskDefinitionArn: arn } };
    }
    case 'AWS::SecretsManager::Secret':
      return { ref: () => localSecretArn(name()), attributes: { Id: () => localSecretArn(name()) } };
    case 'AWS::KMS::Key': {
      // A key's id is a UUID AWS picks; locally one made from the logical id, the same every time.
      const hex = digest(`kms-key/${logicalId}`, 32);
      const keyId = () => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
      return { ref: keyId, attributes: { KeyId: keyId, Arn: () => localArn('kms', `key/${keyId()}`) } };
    }
    case 'AWS::Events::EventBus':
      return { ref: name, attributes: { Arn: () => localArn('events', `event-bus/${name()}`), Name: name } };
    case 'AWS::Events::Rule': {
      // A rule on a custom bus is named <bus>/<rule> in its ARN, and <bus>|<rule> by Ref.
      const bus = properties.EventBusName === undefined ? undefined : resolve(properties.EventBusName).split('/').pop();
      const onBus = bus && bus !== 'default';
      return {
        ref: () => (onBus ? `${bus}|${name()}` : name()),
        attributes: { Arn: () => localArn('events', onBus ? `rule/${bus}/${name()}` : `rule/${name()}`) },
      };
    }
    case 'AWS::Scheduler::ScheduleGroup':
      return { ref: name, attributes: { Arn: () => localArn('scheduler', `schedule-group/${name()}`) } };
    case 'AWS::Scheduler::Schedule': {
      const group = properties.GroupName === undefined ? 'default' : resolve(properties.GroupName);
      return { ref: name, attributes: { Arn: () => localArn('scheduler', `schedule/${group}/${name()}`) } };
    }
    case 'AWS::IAM::Role': {
      const path = properties.Path === undefined ? '/' : resolve(properties.Path);
      return {
        ref: name,
        attributes: { Arn: () => localRoleArn(name(), path), RoleId: () => `AROA${digest(logicalId, 17).toUpperCase()}` },
      };
    }
    case 'AWS::IAM::ManagedPolicy':
      return { ref: () => `arn:${LOCAL_PARTITION}:iam::${LOCAL_ACCOUNT}:policy/${name()}`, attributes: {} };
    case 'AWS::Logs::LogGroup':
      // A log group's Arn attribute ends in ":*" (all its streams).
      return { ref: name, attributes: { Arn: () => localArn('logs', `log-group:${name()}:*`) } };
    case 'AWS::EC2::VPC':
      return {
        ref: () => ec2Id('vpc', logicalId),
        attributes: { VpcId: () => ec2Id('vpc', logicalId), DefaultSecurityGroup: () => ec2Id('sg', `${logicalId}/default`) },
      };
    case 'AWS::EC2::SecurityGroup':
      return {
        ref: () => ec2Id('sg', logicalId),
        attributes: { GroupId: () => ec2Id('sg', logicalId), VpcId: () => resolve(properties.VpcId) },
      };
    case 'AWS::ECR::Repository': {
      const repository = () => String(properties.RepositoryName === undefined ? name().toLowerCase() : resolve(properties.RepositoryName));
      return {
        ref: repository,
        attributes: {
          Arn: () => localArn('ecr', `repository/${repository()}`),
          RepositoryUri: () => `${LOCAL_ACCOUNT}.dkr.ecr.${LOCAL_REGION}.amazonaws.com/${repository()}`,
        },
      };
    }
    case 'AWS::CodeBuild::Project':
      return { ref: name, attributes: { Arn: () => localArn('codebuild', `project/${name()}`) } };
    case 'AWS::SNS::Topic':
      return { ref: () => localArn('sns', name()), attributes: { TopicArn: () => localArn('sns', name()), TopicName: name } };
    case 'AWS::KMS::Key': {
      // A key id is a UUID; locally one derived from the logical id.
      const id = () => digest(logicalId, 32).replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
      return { ref: id, attributes: { KeyId: id, Arn: () => localArn('kms', `key/${id()}`) } };
    }
    case 'AWS::CloudWatch::Alarm':
      return { ref: name, attributes: { Arn: () => localArn('cloudwatch', `alarm:${name()}`) } };
    case 'AWS::CloudWatch::Dashboard':
      return { ref: name, attributes: {} };
    case 'AWS::ApiGatewayV2::Api':
      return { ref: () => `local-${logicalId}`, attributes: { ApiEndpoint: () => `https://local-${logicalId}.execute-api.local` } };
    case 'AWS::ApiGatewayV2::Integration':
    case 'AWS::ApiGatewayV2::Route':
    case 'AWS::ApiGatewayV2::Stage':
    case 'AWS::Lambda::EventSourceMapping':
      // Generated ids nothing compares with an ARN: the local cloud keys its wiring by them.
      return { ref: () => `local-${logicalId}`, attributes: {} };
    default: {
      // A custom resource's attributes are whatever its handler returns at deploy time; locally no
      // deploy-time handler runs, so they stand as placeholders no request can match.
      if (resource.Type.startsWith('Custom::') || resource.Type === 'AWS::CloudFormation::CustomResource') {
        return {
          ref: () => `local-${logicalId}`,
          attributes: new Proxy({}, { get: (_t, attribute) => () => `local-${logicalId}.${String(attribute)}` }),
        };
      }
      const prefix = EC2_ID_PREFIXES[resource.Type];
      if (prefix) return { ref: () => ec2Id(prefix, logicalId), attributes: { Id: () => ec2Id(prefix, logicalId) } };
      throw new Error(`The local cloud does not know what Ref/Fn::GetAtt of ${logicalId} (${resource.Type}) yield`);
    }
  }
}

/**
 * Where the local cloud records the number a deploy gave an AWS::Lambda::Version (a later deploy
 * keeps the version and its number while its resource stays): a property CloudFormation never sets.
 */
export const LOCAL_VERSION_PROPERTY = 'LocalVersionNumber';

/**
 * Where the local cloud records the revision a deploy registered for an AWS::ECS::TaskDefinition
 * (a later deploy that replaces it registers the next one): a property CloudFormation never sets.
 */
export const LOCAL_REVISION_PROPERTY = 'LocalRevision';

// Each AWS::Lambda::Version publishes the next version of its function: the number the local cloud
// recorded for it, or else numbered in template order (a first deploy).
function versionNumber(template: CfnTemplate, logicalId: string): number {
  const recorded = template.Resources?.[logicalId]?.Properties?.[LOCAL_VERSION_PROPERTY];
  if (typeof recorded === 'number') return recorded;
  const functionOf = (id: string) => JSON.stringify(template.Resources?.[id]?.Properties?.FunctionName);
  const target = functionOf(logicalId);
  const versions = Object.entries(template.Resources ?? {})
    .filter(([id, resource]) => resource.Type === 'AWS::Lambda::Version' && functionOf(id) === target)
    .map(([id]) => id);
  return versions.indexOf(logicalId) + 1;
}

/** Ref of a resource or pseudo parameter, as CloudFormation would yield it locally. */
export function localRef(template: object, logicalId: string): string {
  const pseudo = PSEUDO_PARAMETERS[logicalId];
  return pseudo ?? valuesOf(template as CfnTemplate, logicalId).ref();
}

/** Fn::GetAtt of a resource's attribute, as CloudFormation would yield it locally. */
export function localGetAtt(template: object, logicalId: string, attribute: string): string {
  const value = valuesOf(template as CfnTemplate, logicalId).attributes[attribute];
  if (!value) throw new Error(`The local cloud does not know Fn::GetAtt ${logicalId}.${attribute}`);
  return value();
}

/** A template value with every intrinsic resolved as CloudFormation would, in the local region and account. */
export function resolveCloudFormation(template: object, value: unknown): unknown {
  return resolveWith({ ref: localRef, getAtt: localGetAtt }, template as CfnTemplate, value);
}
