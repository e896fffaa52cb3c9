// Template tests for the sandbox: the Fargate task definition, the VPC in each network mode, the
// security groups between the sandbox-step function and the task, who may start and stop tasks, the
// idle reaper's schedule and cdk-nag in each mode. The image is in sandbox-image.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validations } from 'aws-cdk-lib';
import type { CfnTaskDefinition } from 'aws-cdk-lib/aws-ecs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { FunctionRole } from '../../infra/function-entries.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { flatten, functionOf, logicalId, synth, type Synthesized } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** A synthesized stack with lookups by construct, type and role. */
function inspect(synthesized: Synthesized) {
  const { stack, template } = synthesized;
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const idOf = (construct: IConstruct) => logicalId(stack, construct);
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const props = (construct: IConstruct) => {
    const found = resources[idOf(construct)];
    assert.ok(found, `${construct.node.path} not in the template`);
    return found.Properties;
  };
  /** The statements of every IAM::Policy attached to a role (by the role's logical id). */
  const statementsOf = (roleId: string): Statement[] =>
    ofType('AWS::IAM::Policy')
      .filter(([, p]) => list(p.Properties.Roles).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId })))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  const functionStatements = (role: FunctionRole) => statementsOf(idOf(functionOf(stack, role).role!));
  const groupId = (construct: IConstruct) => ({ 'Fn::GetAtt': [idOf(construct), 'GroupId'] });
  /** Standalone ingress/egress rules of a security group (CDK writes cross-group and prefix-list rules this way). */
  const rulesOf = (type: 'AWS::EC2::SecurityGroupIngress' | 'AWS::EC2::SecurityGroupEgress', group: IConstruct) =>
    ofType(type)
      .map(([, r]) => r.Properties)
      .filter((r) => JSON.stringify(r.GroupId) === JSON.stringify(groupId(group)));
  return { stack, template, resources, idOf, ofType, props, statementsOf, functionStatements, groupId, rulesOf };
}

const isolated = inspect(synth());
const egress = inspect(synth({ settings: { sandboxNetwork: 'egress' } }));
const publicNetwork = inspect(synth({ settings: { sandboxNetwork: 'public' } }));

test('task definition: Fargate, ARM64 Linux, cpu/memory from the settings, one container "sandbox"', () => {
  const { props, stack } = isolated;
  const definition = props(stack.sandbox.task.taskDefinition);
  assert.deepEqual(definition.RequiresCompatibilities, ['FARGATE']);
  assert.equal(definition.NetworkMode, 'awsvpc');
  assert.deepEqual(definition.RuntimePlatform, { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' });
  assert.equal(definition.Cpu, String(DEFAULT_SETTINGS.sandboxCpu));
  assert.equal(definition.Memory, String(DEFAULT_SETTINGS.sandboxMemoryMiB));
  const containers = definition.ContainerDefinitions as Record<string, unknown>[];
  assert.equal(containers.length, 1);
  assert.equal(containers[0]!.Name, 'sandbox');
  assert.equal(containers[0]!.Essential, true);
});

test('container: non-root uid 1000, read-only root filesystem, ALL capabilities dropped, no ECS init process (the image runs tini), not privileged', () => {
  const { props, stack } = isolated;
  const [container] = props(stack.sandbox.task.taskDefinition).ContainerDefinitions as Record<string, unknown>[];
  assert.equal(container!.User, '1000');
  assert.equal(container!.ReadonlyRootFilesystem, true);
  assert.equal(container!.Privileged, false);
  assert.deepEqual(container!.LinuxParameters, { Capabilities: { Drop: ['ALL'] }, InitProcessEnabled: false });
});

test('container: writable task storage only at /workspace and /tmp, server on 8080/tcp, its two settings, awslogs', () => {
  const { props, stack, resources } = isolated;
  const definition = props(stack.sandbox.task.taskDefinition);
  const [container] = definition.ContainerDefinitions as Record<string, unknown>[];
  // Bind mounts without a host path: the task's ephemeral storage.
  assert.deepEqual(definition.Volumes, [{ Name: 'workspace' }, { Name: 'tmp' }]);
  assert.deepEqual(container!.MountPoints, [
    { ContainerPath: '/workspace', ReadOnly: false, SourceVolume: 'workspace' },
    { ContainerPath: '/tmp', ReadOnly: false, SourceVolume: 'tmp' },
  ]);
  assert.deepEqual(container!.PortMappings, [{ ContainerPort: 8080, Protocol: 'tcp' }]);
  assert.deepEqual(container!.Environment, [
    { Name: 'SANDBOX_WORKSPACE', Value: '/workspace' },
    { Name: 'SANDBOX_PORT', Value: '8080' },
  ]);
  assert.equal(container!.Secrets, undefined, 'no secrets in the task definition');
  const logging = container!.LogConfiguration as { LogDriver: string; Options: Record<string, { Ref: string }> };
  assert.equal(logging.LogDriver, 'awslogs');
  const logGroup = resources[logging.Options['awslogs-group']!.Ref]!;
  assert.equal(logGroup.Type, 'AWS::Logs::LogGroup');
  assert.equal(logGroup.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
});

test('task role: no policy at all (no attached IAM::Policy, no managed or inline policies); execution role: image pull and logs only', () => {
  for (const { props, stack, idOf, ofType, statementsOf } of [isolated, egress]) {
    const definition = props(stack.sandbox.task.taskDefinition);
    const taskRoleId = idOf(stack.sandbox.task.taskRole);
    assert.deepEqual(definition.TaskRoleArn, { 'Fn::GetAtt': [taskRoleId, 'Arn'] });
    const taskRole = props(stack.sandbox.task.taskRole);
    assert.equal(taskRole.ManagedPolicyArns, undefined);
    assert.equal(taskRole.Policies, undefined);
    assert.deepEqual(statementsOf(taskRoleId), []);
    // No policy names the task role anywhere (ManagedPolicy resources included).
    for (const [id, policy] of [...ofType('AWS::IAM::Policy'), ...ofType('AWS::IAM::ManagedPolicy')]) {
      assert.ok(!JSON.stringify(policy.Properties.Roles ?? []).includes(`"${taskRoleId}"`), `${id} is attached to the task role`);
    }

    const executionRoleId = idOf(stack.sandbox.task.executionRole);
    assert.deepEqual(definition.ExecutionRoleArn, { 'Fn::GetAtt': [executionRoleId, 'Arn'] });
    assert.equal(props(stack.sandbox.task.executionRole).ManagedPolicyArns, undefined);
    const actions = statementsOf(executionRoleId)
      .flatMap((s) => list(s.Action))
      .sort();
    assert.deepEqual(actions, [
      'ecr:BatchCheckLayerAvailability',
      'ecr:BatchGetImage',
      'ecr:GetAuthorizationToken',
      'ecr:GetDownloadUrlForLayer',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
    for (const s of statementsOf(executionRoleId).filter((st) => list(st.Action).some((a) => a.startsWith('logs:')))) {
      assert.deepEqual(s.Resource, { 'Fn::GetAtt': [idOf(stack.sandbox.task.logGroup), 'Arn'] });
    }
  }
});

test('cluster: container insights on', () => {
  assert.deepEqual(isolated.props(isolated.stack.sandbox.task.cluster).ClusterSettings, [{ Name: 'containerInsights', Value: 'enabled' }]);
});

test('isolated network: isolated subnets only; no internet gateway, NAT, Elastic IP or default route; nothing maps public IPs', () => {
  const { ofType } = isolated;
  assert.equal(ofType('AWS::EC2::VPC').length, 1);
  for (const type of [
    'AWS::EC2::InternetGateway',
    'AWS::EC2::VPCGatewayAttachment',
    'AWS::EC2::NatGateway',
    'AWS::EC2::EIP',
    'AWS::EC2::EgressOnlyInternetGateway',
  ]) {
    assert.equal(ofType(type).length, 0, type);
  }
  assert.equal(ofType('AWS::EC2::Route').length, 0, 'no routes besides the local one and the gateway endpoints');
  const subnets = ofType('AWS::EC2::Subnet');
  assert.equal(subnets.length, DEFAULT_SETTINGS.sandboxAzs);
  for (const [id, subnet] of subnets) {
    assert.notEqual(subnet.Properties.MapPublicIpOnLaunch, true, id);
    assert.ok(JSON.stringify(subnet.Properties.Tags).includes('"Value":"Isolated"'), id);
  }
});

test('isolated network: free gateway endpoints for S3 and DynamoDB; interface endpoints for ECR api, ECR dkr and Logs with private DNS', () => {
  const { ofType, groupId, stack } = isolated;
  const endpoints = ofType('AWS::EC2::VPCEndpoint').map(([, e]) => e.Properties);
  const service = (e: Record<string, unknown>) => flatten(e.ServiceName).replace('com.amazonaws.<AWS::Region>.', '');
  const gateways = endpoints.filter((e) => e.VpcEndpointType === 'Gateway');
  assert.deepEqual(gateways.map(service).sort(), ['dynamodb', 's3']);
  const interfaces = endpoints.filter((e) => e.VpcEndpointType === 'Interface');
  assert.deepEqual(interfaces.map(service).sort(), ['ecr.api', 'ecr.dkr', 'logs']);
  for (const e of interfaces) {
    assert.equal(e.PrivateDnsEnabled, true, service(e));
    assert.deepEqual(e.SecurityGroupIds, [groupId(stack.sandbox.network.endpointSecurityGroup!)], service(e));
    assert.equal(list(e.SubnetIds).length, DEFAULT_SETTINGS.sandboxAzs, service(e));
  }
});

test("isolated network: every endpoint carries only this deployment's traffic (no presigned-URL upload to another bucket)", () => {
  const { ofType, idOf, stack } = isolated;
  const policies = new Map(
    ofType('AWS::EC2::VPCEndpoint').map(([, e]) => [
      flatten(e.Properties.ServiceName).replace('com.amazonaws.<AWS::Region>.', ''),
      (e.Properties.PolicyDocument as { Statement: (Statement & { Principal: unknown })[] } | undefined)?.Statement.map((st) => ({
        principal: st.Principal,
        actions: list(st.Action).sort(),
        resources: list(st.Resource).map(flatten).sort(),
      })),
    ]),
  );
  const bucket = `<${idOf(stack.bucket)}.Arn>`;
  assert.deepEqual(policies.get('s3'), [
    {
      principal: { AWS: '*' },
      actions: ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject'],
      resources: [bucket, `${bucket}/*`],
    },
    {
      principal: { AWS: '*' },
      actions: ['s3:GetObject'],
      resources: ['arn:<AWS::Partition>:s3:::prod-<AWS::Region>-starport-layer-bucket/*'],
    },
  ]);
  const table = `<${idOf(stack.table)}.Arn>`;
  assert.deepEqual(policies.get('dynamodb'), [
    { principal: { AWS: '*' }, actions: ['dynamodb:*'], resources: [table, `${table}/index/*`] },
  ]);
  for (const ecr of ['ecr.api', 'ecr.dkr']) {
    assert.deepEqual(policies.get(ecr), [
      {
        principal: { AWS: '*' },
        actions: ['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'],
        resources: ['arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository/*'],
      },
      { principal: { AWS: '*' }, actions: ['ecr:GetAuthorizationToken'], resources: ['*'] },
    ]);
  }
  assert.deepEqual(policies.get('logs'), [
    {
      principal: { AWS: '*' },
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: ['arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:*'],
    },
  ]);
});

test('isolated network: DNS answers only AWS service names (a DNS Firewall on the VPC, failing closed); egress mode has none', () => {
  const { ofType, idOf, stack } = isolated;
  const lists = new Map(ofType('AWS::Route53Resolver::FirewallDomainList').map(([id, r]) => [id, r.Properties.Domains]));
  const [group] = ofType('AWS::Route53Resolver::FirewallRuleGroup');
  const rules = (group![1].Properties.FirewallRules as Record<string, unknown>[]).map((r) => ({
    priority: r.Priority,
    action: r.Action,
    domains: lists.get((r.FirewallDomainListId as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0]!),
    ...(r.BlockResponse ? { blockResponse: r.BlockResponse } : {}),
  }));
  assert.deepEqual(rules, [
    { priority: 100, action: 'ALLOW', domains: ['amazonaws.com.', '*.amazonaws.com.'] },
    { priority: 200, action: 'BLOCK', domains: ['*'], blockResponse: 'NXDOMAIN' },
  ]);
  const associations = ofType('AWS::Route53Resolver::FirewallRuleGroupAssociation').map(([, r]) => r.Properties);
  assert.equal(associations.length, 1);
  assert.deepEqual(associations[0]!.VpcId, { Ref: idOf(stack.sandbox.network.vpc) });
  assert.equal(ofType('AWS::Route53Resolver::FirewallResolverConfig' as string).length, 0, 'fail-open stays off (the default)');
  assert.equal(egress.ofType('AWS::Route53Resolver::FirewallRuleGroup').length, 0);
  assert.ok(egress.ofType('AWS::EC2::VPCEndpoint').every(([, e]) => e.Properties.PolicyDocument === undefined));
});

test('egress network: one NAT gateway in a public subnet, private subnets with egress, gateway endpoints, no interface endpoints', () => {
  const { ofType } = egress;
  assert.equal(ofType('AWS::EC2::NatGateway').length, 1);
  assert.equal(ofType('AWS::EC2::InternetGateway').length, 1);
  const subnets = ofType('AWS::EC2::Subnet');
  assert.equal(subnets.length, 2, 'one public subnet for the NAT gateway and one private subnet');
  for (const [id, subnet] of subnets) assert.equal(subnet.Properties.MapPublicIpOnLaunch, false, id);
  const endpoints = ofType('AWS::EC2::VPCEndpoint').map(([, e]) => e.Properties);
  assert.deepEqual(
    endpoints.map((e) => e.VpcEndpointType),
    ['Gateway', 'Gateway'],
  );
  assert.equal(egress.stack.sandbox.network.endpointSecurityGroup, undefined);
});

test('public network: tasks in public subnets with a public address; no NAT gateway, no interface endpoints, no DNS firewall', () => {
  const { ofType, stack, props } = publicNetwork;
  const { network } = stack.sandbox;
  assert.equal(ofType('AWS::EC2::InternetGateway').length, 1);
  for (const type of ['AWS::EC2::NatGateway', 'AWS::EC2::EIP', 'AWS::Route53Resolver::FirewallRuleGroup']) {
    assert.equal(ofType(type).length, 0, type);
  }
  assert.deepEqual(
    ofType('AWS::EC2::VPCEndpoint').map(([, e]) => e.Properties.VpcEndpointType),
    ['Gateway', 'Gateway'],
  );
  assert.equal(network.endpointSecurityGroup, undefined);
  // Nothing gets an address on launch: only RunTask's assignPublicIp gives the tasks one.
  for (const [id, subnet] of ofType('AWS::EC2::Subnet')) assert.equal(subnet.Properties.MapPublicIpOnLaunch, false, id);
  const publicSubnets = network.vpc.publicSubnets.map((s) => stack.resolve(s.subnetId) as unknown);
  assert.equal(publicSubnets.length, 1);
  // The public subnet's only way out is the internet gateway.
  const defaultRoutes = ofType('AWS::EC2::Route').map(([, r]) => r.Properties);
  assert.deepEqual(
    defaultRoutes.map((r) => [r.DestinationCidrBlock, (r.GatewayId as { Ref: string }).Ref]),
    [['0.0.0.0/0', ofType('AWS::EC2::InternetGateway')[0]![0]]],
  );
  // agent-step starts tasks there, with a public address; in the other modes with none.
  const agentEnv = (props(stack.functions.agentStep).Environment as { Variables: Record<string, unknown> }).Variables;
  assert.deepEqual(agentEnv.SANDBOX_SUBNET_IDS, publicSubnets[0]);
  assert.equal(agentEnv.SANDBOX_ASSIGN_PUBLIC_IP, 'ENABLED');
  for (const target of [isolated, egress]) {
    const env = (target.props(target.stack.functions.agentStep).Environment as { Variables: Record<string, unknown> }).Variables;
    assert.equal(env.SANDBOX_ASSIGN_PUBLIC_IP, undefined);
  }
  // The S3 and DynamoDB gateway endpoints serve both the tasks' and the function's subnets, unrestricted as in egress mode.
  for (const [, endpoint] of ofType('AWS::EC2::VPCEndpoint')) {
    assert.equal((endpoint.Properties.RouteTableIds as unknown[]).length, 2);
    assert.equal(endpoint.Properties.PolicyDocument, undefined);
  }
});

test('public network: the sandbox-step function stays in isolated subnets, reaching the task over the VPC; nothing from the internet reaches a task', () => {
  const { stack, props, rulesOf, groupId } = publicNetwork;
  const { network, securityGroups } = stack.sandbox;
  const isolatedSubnets = network.vpc.isolatedSubnets.map((s) => stack.resolve(s.subnetId) as unknown);
  assert.equal(isolatedSubnets.length, 1);
  assert.deepEqual((props(stack.functions.sandboxStep).VpcConfig as { SubnetIds: unknown[] }).SubnetIds, isolatedSubnets);
  // The one ingress rule of the task's group: the sandbox-step function, on the command server's port.
  assert.equal(props(securityGroups.task).SecurityGroupIngress, undefined, 'no inline ingress');
  assert.deepEqual(
    rulesOf('AWS::EC2::SecurityGroupIngress', securityGroups.task).map((r) => [r.SourceSecurityGroupId, r.CidrIp, r.FromPort]),
    [[groupId(securityGroups.step), undefined, 8080]],
  );
  // Out: anywhere, as in egress mode.
  assert.deepEqual(props(securityGroups.task).SecurityGroupEgress, [
    { CidrIp: '0.0.0.0/0', Description: 'Allow all outbound traffic by default', IpProtocol: '-1' },
  ]);
});

test('switching modes keeps the sandbox subnets and security groups (same logical ids, CIDRs, descriptions): updated, not replaced', () => {
  const sandboxSubnets = ({ stack, idOf, props }: ReturnType<typeof inspect>) =>
    stack.sandbox.network.vpc.selectSubnets(stack.sandbox.network.subnets).subnets.map((subnet) => {
      const cfn = subnet.node.findChild('Subnet') as IConstruct;
      return [idOf(cfn), props(cfn).CidrBlock];
    });
  assert.deepEqual(sandboxSubnets(egress), sandboxSubnets(isolated));
  assert.deepEqual(sandboxSubnets(publicNetwork), sandboxSubnets(isolated));
  // Egress and public mode share the public subnet (the NAT gateway's, or the tasks').
  const publicSubnets = ({ stack, idOf, props }: ReturnType<typeof inspect>) =>
    stack.sandbox.network.vpc.publicSubnets.map((subnet) => {
      const cfn = subnet.node.findChild('Subnet') as IConstruct;
      return [idOf(cfn), props(cfn).CidrBlock];
    });
  assert.deepEqual(publicSubnets(publicNetwork), publicSubnets(egress));
  // The security groups are updated in place too (a new description would replace them under running tasks).
  for (const group of ['task', 'step'] as const) {
    const [a, b, c] = [isolated, egress, publicNetwork].map((t) => {
      const securityGroup = t.stack.sandbox.securityGroups[group];
      return [t.idOf(securityGroup), t.props(securityGroup).GroupDescription];
    });
    assert.deepEqual(a, b, group);
    assert.deepEqual(a, c, group);
  }
});

test('both modes: VPC flow logs (all traffic) to a log group with retention', () => {
  for (const { ofType, stack, idOf, resources } of [isolated, egress, publicNetwork]) {
    const [flowLog] = ofType('AWS::EC2::FlowLog').map(([, f]) => f.Properties);
    assert.ok(flowLog);
    assert.deepEqual(flowLog.ResourceId, { Ref: idOf(stack.sandbox.network.vpc) });
    assert.equal(flowLog.ResourceType, 'VPC');
    assert.equal(flowLog.TrafficType, 'ALL');
    const group = resources[(flowLog.LogGroupName as { Ref: string }).Ref]!;
    assert.equal(group.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
  }
});

test('task security group: ingress only from the sandbox-step security group on 8080/tcp', () => {
  for (const { stack, props, rulesOf, groupId } of [isolated, egress, publicNetwork]) {
    const { task, step } = stack.sandbox.securityGroups;
    assert.equal(props(task).SecurityGroupIngress, undefined, 'no inline ingress');
    assert.deepEqual(rulesOf('AWS::EC2::SecurityGroupIngress', task), [
      {
        Description: 'Sandbox-step function to the command server',
        GroupId: groupId(task),
        SourceSecurityGroupId: groupId(step),
        IpProtocol: 'tcp',
        FromPort: 8080,
        ToPort: 8080,
      },
    ]);
  }
});

test('task security group egress: isolated, HTTPS to the endpoint SG and the S3 prefix list only; egress mode, all outbound', () => {
  const s3PrefixList = (target: ReturnType<typeof inspect>) => target.stack.resolve(target.stack.sandbox.prefixLists.s3);
  {
    const { stack, props, rulesOf, groupId } = isolated;
    const { task } = stack.sandbox.securityGroups;
    assert.equal(props(task).SecurityGroupEgress, undefined, 'no inline egress: no allow-all rule');
    const egressRules = rulesOf('AWS::EC2::SecurityGroupEgress', task).map(({ Description: _d, GroupId: _g, ...rule }) => rule);
    assert.deepEqual(egressRules, [
      { DestinationSecurityGroupId: groupId(stack.sandbox.network.endpointSecurityGroup!), IpProtocol: 'tcp', FromPort: 443, ToPort: 443 },
      { DestinationPrefixListId: s3PrefixList(isolated), IpProtocol: 'tcp', FromPort: 443, ToPort: 443 },
    ]);
    // The endpoints accept HTTPS from sandbox tasks only.
    const endpointSg = stack.sandbox.network.endpointSecurityGroup!;
    assert.deepEqual(
      rulesOf('AWS::EC2::SecurityGroupIngress', endpointSg).map((r) => [r.SourceSecurityGroupId, r.FromPort, r.ToPort]),
      [[groupId(task), 443, 443]],
    );
    assert.equal(props(endpointSg).SecurityGroupIngress, undefined);
  }
  {
    const { stack, props, rulesOf } = egress;
    const { task } = stack.sandbox.securityGroups;
    assert.deepEqual(props(task).SecurityGroupEgress, [
      { CidrIp: '0.0.0.0/0', Description: 'Allow all outbound traffic by default', IpProtocol: '-1' },
    ]);
    assert.deepEqual(rulesOf('AWS::EC2::SecurityGroupEgress', task), []);
  }
});

test('sandbox-step security group: no ingress; egress to the task on 8080 and HTTPS to the S3 and DynamoDB prefix lists, nothing else', () => {
  for (const target of [isolated, egress, publicNetwork]) {
    const { stack, props, rulesOf, groupId } = target;
    const { task, step } = stack.sandbox.securityGroups;
    assert.equal(props(step).SecurityGroupIngress, undefined);
    assert.deepEqual(rulesOf('AWS::EC2::SecurityGroupIngress', step), []);
    assert.equal(props(step).SecurityGroupEgress, undefined, 'no inline egress: no allow-all rule');
    const rules = rulesOf('AWS::EC2::SecurityGroupEgress', step).map(({ Description: _d, GroupId: _g, ...rule }) => rule);
    const prefixLists = stack.sandbox.prefixLists;
    assert.deepEqual(rules, [
      { DestinationSecurityGroupId: groupId(task), IpProtocol: 'tcp', FromPort: 8080, ToPort: 8080 },
      { DestinationPrefixListId: stack.resolve(prefixLists.s3), IpProtocol: 'tcp', FromPort: 443, ToPort: 443 },
      { DestinationPrefixListId: stack.resolve(prefixLists.dynamoDb), IpProtocol: 'tcp', FromPort: 443, ToPort: 443 },
    ]);
  }
});

test('prefix lists: looked up at deploy time by name in this Region, with a role that may only describe prefix lists', () => {
  const { ofType, idOf, stack, statementsOf } = isolated;
  const lookups = ofType('Custom::AWS').map(([, r]) => flatten(r.Properties.Create));
  assert.equal(lookups.length, 2);
  for (const service of ['s3', 'dynamodb']) {
    assert.ok(
      lookups.some(
        (l) => l.includes('"action":"DescribePrefixLists"') && l.includes(`"Values":["com.amazonaws.<AWS::Region>.${service}"]`),
      ),
      service,
    );
  }
  const statements = statementsOf(idOf(stack.sandbox.prefixLists.role));
  assert.deepEqual(statements.flatMap((s) => list(s.Action)).sort(), [
    'ec2:DescribePrefixLists',
    'logs:CreateLogStream',
    'logs:PutLogEvents',
  ]);
});

test('sandbox-step runs in the sandbox subnets with its security group; agent-step and every other function stay out of the VPC', () => {
  for (const { stack, props, groupId } of [isolated, egress]) {
    const subnets = stack.sandbox.network.vpc.selectSubnets(stack.sandbox.network.subnets).subnetIds.map((s) => stack.resolve(s));
    assert.equal(subnets.length, 1);
    assert.deepEqual(props(stack.functions.sandboxStep).VpcConfig, {
      SecurityGroupIds: [groupId(stack.sandbox.securityGroups.step)],
      SubnetIds: subnets,
    });
    for (const role of Object.keys(stack.functions) as FunctionRole[]) {
      if (role !== 'sandboxStep') assert.equal(props(functionOf(stack, role)).VpcConfig, undefined, role);
    }
  }
  // In egress mode the sandbox subnets are the private ones behind the NAT, not the public one.
  const privateSubnets = egress.stack.sandbox.network.vpc.privateSubnets.map((s) => egress.stack.resolve(s.subnetId));
  assert.deepEqual((egress.props(egress.stack.functions.sandboxStep).VpcConfig as { SubnetIds: unknown[] }).SubnetIds, privateSubnets);
});

test('sandbox-step IAM: table, bucket objects, its own logs and network interfaces; no ECS, IAM, Bedrock, Secrets or Step Functions', () => {
  const { stack, functionStatements, idOf } = isolated;
  const actions = new Set(functionStatements('sandboxStep').flatMap((s) => list(s.Action)));
  for (const action of actions) {
    assert.match(action, /^(dynamodb|s3|logs|xray|ec2):/, action);
  }
  const ec2 = functionStatements('sandboxStep').filter((s) => list(s.Action).some((a) => a.startsWith('ec2:')));
  const create = ec2.find((s) => list(s.Action).includes('ec2:CreateNetworkInterface'))!;
  const resources = list(create.Resource).map(flatten);
  const subnet = flatten(stack.resolve(stack.sandbox.network.vpc.isolatedSubnets[0]!.subnetId));
  assert.deepEqual(resources.sort(), [
    'arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*',
    `arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:security-group/<${idOf(stack.sandbox.securityGroups.step)}.GroupId>`,
    `arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:subnet/${subnet}`,
  ]);
  const describe = ec2.find((s) => list(s.Action).includes('ec2:DescribeNetworkInterfaces'))!;
  assert.deepEqual(
    list(describe.Action)
      .filter((a) => a.startsWith('ec2:'))
      .sort(),
    ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
  );
  assert.equal(isolated.props(stack.functions.sandboxStep.role!).ManagedPolicyArns, undefined, 'no AWSLambdaVPCAccessExecutionRole');
});

test('agent-step IAM: RunTask of the task definition in this cluster, PassRole of the two sandbox roles to ECS tasks only, tag at RunTask only', () => {
  const { stack, functionStatements, idOf } = isolated;
  const { task } = stack.sandbox;
  const clusterArn = { 'Fn::GetAtt': [idOf(task.cluster), 'Arn'] };
  const inCluster = { ArnEquals: { 'ecs:cluster': clusterArn } };
  const statements = functionStatements('agentStep');
  const byAction = (action: string) => statements.filter((s) => list(s.Action).includes(action));

  const [runTask, ...moreRunTask] = byAction('ecs:RunTask');
  assert.equal(moreRunTask.length, 0);
  assert.deepEqual(list(runTask!.Action), ['ecs:RunTask']);
  // Every revision of the one family: RunTask of the family runs (and is authorized on) its latest ACTIVE revision.
  const family = task.taskDefinition.family;
  assert.match(family, /^[A-Za-z0-9_-]+$/, 'a plain name, fixed at synth');
  assert.equal(stack.resolve((task.taskDefinition.node.defaultChild as CfnTaskDefinition).family), family);
  assert.deepEqual(list(runTask!.Resource).map(flatten), [
    `arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task-definition/${family}:*`,
  ]);
  assert.deepEqual(runTask!.Condition, inCluster);

  const [passRole, ...morePassRole] = byAction('iam:PassRole');
  assert.equal(morePassRole.length, 0);
  assert.deepEqual(list(passRole!.Action), ['iam:PassRole']);
  assert.deepEqual(
    list(passRole!.Resource).map(flatten).sort(),
    [`<${idOf(task.executionRole)}.Arn>`, `<${idOf(task.taskRole)}.Arn>`].sort(),
  );
  assert.deepEqual(passRole!.Condition, { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } });

  const taskArns = `arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/<${idOf(task.cluster)}>/*`;
  const [tag] = byAction('ecs:TagResource');
  assert.deepEqual(list(tag!.Resource).map(flatten), [taskArns]);
  assert.deepEqual(tag!.Condition, { StringEquals: { 'ecs:CreateAction': 'RunTask' } });

  const [stop] = byAction('ecs:StopTask');
  assert.deepEqual(list(stop!.Action).sort(), ['ecs:DescribeTasks', 'ecs:StopTask']);
  assert.deepEqual(list(stop!.Resource).map(flatten), [taskArns]);
  assert.deepEqual(stop!.Condition, inCluster);

  const ecsActions = statements
    .flatMap((s) => list(s.Action))
    .filter((a) => a.startsWith('ecs:'))
    .sort();
  assert.deepEqual(ecsActions, ['ecs:DescribeTasks', 'ecs:RunTask', 'ecs:StopTask', 'ecs:TagResource']);
});

test("only agent-step may start sandboxes or pass roles (besides the scheduler, which passes its schedule role); the reaper only lists, describes and stops this cluster's tasks", () => {
  const { stack, statementsOf, ofType, functionStatements, idOf } = isolated;
  for (const [roleId] of ofType('AWS::IAM::Role')) {
    if (roleId === idOf(stack.functions.agentStep.role!)) continue;
    const actions = statementsOf(roleId).flatMap((s) => list(s.Action));
    assert.ok(!actions.includes('ecs:RunTask'), roleId);
    // The scheduler's PassRole (the schedule role, to EventBridge Scheduler only) is tested in events.test.ts.
    if (roleId !== idOf(stack.functions.scheduler.role!)) assert.ok(!actions.includes('iam:PassRole'), roleId);
  }
  const reaper = functionStatements('sandboxReaper');
  const ecs = reaper.filter((s) => list(s.Action).some((a) => a.startsWith('ecs:')));
  assert.deepEqual(ecs.map((s) => list(s.Action).sort()).sort(), [['ecs:DescribeTasks', 'ecs:StopTask'], ['ecs:ListTasks']]);
  for (const statement of ecs) {
    assert.deepEqual(statement.Condition, { ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [idOf(stack.sandbox.task.cluster), 'Arn'] } } });
  }
  // AWS authorizes listing a cluster's tasks against "*" (not its container instances): held to this cluster by ecs:cluster.
  assert.deepEqual(ecs.find((s) => list(s.Action).includes('ecs:ListTasks'))!.Resource, '*');
  for (const action of reaper.flatMap((s) => list(s.Action))) assert.match(action, /^(dynamodb|ecs|logs|xray):/, action);
});

test('reaper: an EventBridge schedule every minute invokes the reaper function', () => {
  const { stack, props, idOf } = isolated;
  const rule = props(stack.sandbox.reaperRule);
  assert.equal(rule.ScheduleExpression, 'rate(1 minute)');
  assert.equal(rule.State, 'ENABLED');
  const targets = rule.Targets as { Arn: unknown; RetryPolicy: { MaximumRetryAttempts: number } }[];
  assert.equal(targets.length, 1);
  assert.deepEqual(targets[0]!.Arn, { 'Fn::GetAtt': [idOf(stack.functions.sandboxReaper), 'Arn'] });
  assert.equal(targets[0]!.RetryPolicy.MaximumRetryAttempts, 0, 'the next tick retries');
});

test('settings flow into the task: cpu, memory, idle minutes', () => {
  const custom = inspect(synth({ settings: { sandboxCpu: '2048', sandboxMemoryMiB: '4096', sandboxIdleMinutes: '15' } }));
  const definition = custom.props(custom.stack.sandbox.task.taskDefinition);
  assert.equal(definition.Cpu, '2048');
  assert.equal(definition.Memory, '4096');
  for (const role of ['agentStep', 'sandboxReaper'] as const) {
    const env = (custom.props(functionOf(custom.stack, role)).Environment as { Variables: Record<string, unknown> }).Variables;
    assert.equal(env.SANDBOX_IDLE_MINUTES, '15', role);
  }
});

function acknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: c.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

test('cdk-nag AwsSolutions: clean in every network mode, every acknowledgement reasoned', () => {
  for (const [mode, synthesized] of [
    ['isolated', synth()],
    ['egress', synth({ settings: { sandboxNetwork: 'egress' } })],
    ['public', synth({ settings: { sandboxNetwork: 'public' } })],
  ] as const) {
    const report = new AwsSolutionsChecks().validateScope(synthesized.app);
    assert.deepEqual(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
      [],
      mode,
    );
    // CDK's own cfn-lint acknowledgements (CloudFormation-Validate::…) are not nag findings.
    const sandboxAcks = acknowledgements(synthesized.app).filter(
      (a) => /\/(Sandbox|PrefixLists)/.test(a.path) && !a.id.startsWith('CloudFormation-Validate::'),
    );
    assert.ok(sandboxAcks.length >= 8, mode);
    for (const { path, id, reason } of sandboxAcks) {
      assert.match(id, /^AwsSolutions-[A-Z]+\d+(\[.+\])?$/, `${mode} ${path}`);
      assert.ok(reason.trim().length >= 40, `${mode} ${path} ${id}: reason too short`);
    }
  }
});
