// Who may talk to whom in the sandbox VPC.
//
//   SandboxStepSg (the sandbox-step function)  --tcp 8080-->  SandboxTaskSg (the command server)
//   SandboxStepSg  --HTTPS-->  S3 and DynamoDB (their prefix lists, through the gateway endpoints)
//   SandboxTaskSg  --HTTPS-->  interface endpoints (ECR, Logs) and S3 (image layers)   [isolated]
//   SandboxTaskSg  --anything-->  anywhere (through the NAT gateway)                   [egress]
//   SandboxTaskSg  --anything-->  anywhere (from its public address)                  [public]
//
// Nothing else reaches a task: no ingress but the step function's, on the server's port. In public
// mode that matters most: the task's public address answers nothing from the internet, as a security
// group admits no inbound traffic it does not name (replies to the task's own connections aside).
import { Peer, Port, SecurityGroup } from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';
import type { AwsPrefixLists } from './aws-prefix-lists.ts';
import type { SandboxNetwork } from './sandbox-network.ts';

export interface SandboxSecurityGroupsProps {
  readonly network: SandboxNetwork;
  readonly prefixLists: AwsPrefixLists;
  /** The command server's port inside the task. */
  readonly port: number;
}

export class SandboxSecurityGroups extends Construct {
  readonly task: SecurityGroup;
  readonly step: SecurityGroup;

  constructor(scope: Construct, id: string, props: SandboxSecurityGroupsProps) {
    super(scope, id);
    const { network, prefixLists, port } = props;
    const { vpc } = network;
    const isolated = network.mode === 'isolated';
    const https = Port.tcp(443);

    this.task = new SecurityGroup(this, 'SandboxTaskSg', {
      vpc,
      // The same description in every mode: changing it would replace the group under running tasks.
      description: 'Sandbox tasks: the command server is reachable from the sandbox-step function only',
      allowAllOutbound: !isolated,
    });
    this.step = new SecurityGroup(this, 'SandboxStepSg', {
      vpc,
      description: 'Sandbox-step function: to the sandbox command server, and HTTPS to S3 and DynamoDB',
      allowAllOutbound: false,
    });

    // Adds the task's ingress and the step's egress rule in one go.
    this.task.connections.allowFrom(this.step, Port.tcp(port), 'Sandbox-step function to the command server');
    this.step.addEgressRule(Peer.prefixList(prefixLists.s3), https, 'S3 through the gateway endpoint');
    this.step.addEgressRule(Peer.prefixList(prefixLists.dynamoDb), https, 'DynamoDB through the gateway endpoint');

    if (isolated) {
      const endpoints = network.endpointSecurityGroup;
      if (!endpoints) throw new Error('an isolated sandbox network has an endpoint security group');
      endpoints.connections.allowFrom(this.task, https, 'Sandbox tasks pull the image and write logs');
      this.task.addEgressRule(Peer.prefixList(prefixLists.s3), https, 'Image layers from S3 through the gateway endpoint');
    }
  }
}
