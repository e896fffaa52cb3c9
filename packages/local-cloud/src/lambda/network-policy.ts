// What a function may connect to, read from the template as AWS would apply it: a function without
// VpcConfig reaches anything public and nothing private in the VPC; a function in the VPC reaches
// what its security groups' egress rules name, where the destination's ingress agrees: another
// security group's members (private addresses, on the allowed ports) and AWS services through their
// gateway endpoints (prefix lists). Locally the services behind prefix lists are the S3 and
// DynamoDB emulators, found from the function's endpoint environment.

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
type Template = { Resources: Record<string, { Type: string; Properties?: any }> };

export type WorkerNetwork =
  | { mode: 'public'; functionName: string }
  | { mode: 'vpc'; functionName: string; privatePorts: number[]; endpoints: { service: string; host: string; port: number }[] };

interface Rule {
  group: string;
  peerGroup?: string;
  prefixListService?: string;
  fromPort: number;
  toPort: number;
}

/** `{ "Fn::GetAtt": [id, "GroupId"] }` or `{ Ref: id }` → the security group's logical id. */
function groupId(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const v = value as { 'Fn::GetAtt'?: [string, string]; Ref?: string };
  return v['Fn::GetAtt']?.[0] ?? v.Ref;
}

/** Which AWS service a prefix-list lookup (the stack's DescribePrefixLists custom resource) names. */
function prefixListService(template: Template, value: unknown): string | undefined {
  const lookup = groupId(value);
  const create = JSON.stringify(lookup ? template.Resources[lookup]?.Properties?.Create : undefined) ?? '';
  return /\.(s3|dynamodb)\\"/.exec(create)?.[1];
}

function rules(template: Template, type: 'Egress' | 'Ingress'): Rule[] {
  const found: Rule[] = [];
  const add = (group: string, rule: any) =>
    found.push({
      group,
      peerGroup: groupId(type === 'Egress' ? rule.DestinationSecurityGroupId : rule.SourceSecurityGroupId),
      prefixListService: type === 'Egress' ? prefixListService(template, rule.DestinationPrefixListId) : undefined,
      fromPort: rule.IpProtocol === '-1' ? 0 : Number(rule.FromPort),
      toPort: rule.IpProtocol === '-1' ? 65535 : Number(rule.ToPort),
    });
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type === 'AWS::EC2::SecurityGroup') {
      for (const rule of resource.Properties?.[`SecurityGroup${type}`] ?? []) add(id, rule);
    }
    if (resource.Type === `AWS::EC2::SecurityGroup${type}`) {
      const group = groupId(resource.Properties?.GroupId);
      if (group) add(group, resource.Properties);
    }
  }
  return found;
}

function ports(rule: Rule): number[] {
  return Array.from({ length: Math.min(rule.toPort - rule.fromPort + 1, 1024) }, (_, i) => rule.fromPort + i);
}

function endpointOf(url: string | undefined): { host: string; port: number } | undefined {
  if (!url) return undefined;
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)) };
}

/**
 * `localPorts` maps a port of the template to the one a local stand-in listens on instead (the
 * sandbox tasks' command server port, chosen free on this machine).
 */
export function workerNetwork(
  template: Template,
  functionLogicalId: string,
  env: Record<string, string>,
  localPorts: Record<number, number> = {},
): WorkerNetwork {
  const groups: string[] = (template.Resources[functionLogicalId]?.Properties?.VpcConfig?.SecurityGroupIds ?? [])
    .map(groupId)
    .filter(Boolean);
  if (groups.length === 0) return { mode: 'public', functionName: functionLogicalId };
  const ingress = rules(template, 'Ingress');
  const privatePorts = new Set<number>();
  const services = new Set<string>();
  for (const rule of rules(template, 'Egress').filter((r) => groups.includes(r.group))) {
    if (rule.prefixListService) services.add(rule.prefixListService);
    if (!rule.peerGroup) continue;
    // Both sides must agree: our egress to the peer, and the peer's ingress from one of our groups.
    for (const port of ports(rule)) {
      const admitted = ingress.some(
        (i) => i.group === rule.peerGroup && i.peerGroup && groups.includes(i.peerGroup) && port >= i.fromPort && port <= i.toPort,
      );
      if (admitted) privatePorts.add(localPorts[port] ?? port);
    }
  }
  const endpointVariables: Record<string, string> = { s3: 'AWS_ENDPOINT_URL_S3', dynamodb: 'AWS_ENDPOINT_URL_DYNAMODB' };
  const endpoints = [...services].flatMap((service) => {
    const endpoint = endpointOf(env[endpointVariables[service] ?? '']);
    return endpoint ? [{ service, ...endpoint }] : [];
  });
  return { mode: 'vpc', functionName: functionLogicalId, privatePorts: [...privatePorts], endpoints };
}
