// The sandbox's VPC, in one of three modes (deployment setting sandboxNetwork):
//
//   isolated (default)  PRIVATE_ISOLATED subnets only: no internet gateway, no NAT, no route out.
//                       Gateway endpoints (free) reach S3 and DynamoDB; interface endpoints for ECR
//                       (api, dkr) and CloudWatch Logs let Fargate pull the image and ship logs.
//   egress              PRIVATE_WITH_EGRESS subnets behind one NAT gateway (and the public subnet it
//                       lives in): sandbox commands reach the internet. Same gateway endpoints; no
//                       interface endpoints (the NAT reaches ECR and Logs).
//   public              Tasks in PUBLIC subnets (a route to the internet gateway), each with a public
//                       address of its own (RunTask assignPublicIp), which its security group opens to
//                       nothing: no NAT gateway and no interface endpoints, so nothing is billed while
//                       no task runs. The sandbox-step function stays in PRIVATE_ISOLATED subnets (a
//                       Lambda function never gets a public address) and reaches a task's private
//                       address over the VPC's local route, S3 and DynamoDB through the gateway
//                       endpoints, as in the other modes.
//
// Fewer AZs mean fewer interface endpoints to pay for (sandboxAzs, default 1); which zones is decided
// at deploy time (SandboxAvailabilityZones). Every flow is logged.
import { type CfnResource, Stack } from 'aws-cdk-lib';
import {
  FlowLogDestination,
  FlowLogTrafficType,
  GatewayVpcEndpointAwsService,
  type GatewayVpcEndpoint,
  InterfaceVpcEndpointAwsService,
  type InterfaceVpcEndpoint,
  IpAddresses,
  SecurityGroup,
  type SubnetSelection,
  SubnetType,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { SandboxNetworkMode } from '../settings.ts';
import { giveLogGroup } from './custom-resource-functions.ts';

// The stack-wide provider CDK creates for restrictDefaultSecurityGroup.
const RESTRICT_DEFAULT_SG_PROVIDER_ID = 'Custom::VpcRestrictDefaultSGCustomResourceProvider';

export interface SandboxNetworkProps {
  readonly mode: SandboxNetworkMode;
  /** Names of the Availability Zones to span (1..3; deploy-time values from SandboxAvailabilityZones). */
  readonly availabilityZones: string[];
  readonly logRetention: RetentionDays;
}

export class SandboxNetwork extends Construct {
  readonly mode: SandboxNetworkMode;
  readonly vpc: Vpc;
  /** Where the sandbox-step function runs (and the tasks, but in public mode). */
  readonly subnets: SubnetSelection;
  /** Where sandbox tasks run: the public subnets in public mode, otherwise `subnets`. */
  readonly taskSubnets: SubnetSelection;
  /** Tasks get a public address (public mode): their only way out, as no NAT gateway exists. */
  readonly taskPublicIp: boolean;
  readonly s3Endpoint: GatewayVpcEndpoint;
  readonly dynamoDbEndpoint: GatewayVpcEndpoint;
  /** ECR api, ECR dkr and CloudWatch Logs, in isolated mode only. */
  readonly interfaceEndpoints: InterfaceVpcEndpoint[];
  /** Guards the interface endpoints (isolated mode only); SandboxSecurityGroups opens it to tasks. */
  readonly endpointSecurityGroup?: SecurityGroup;
  readonly flowLogGroup: LogGroup;

  constructor(scope: Construct, id: string, props: SandboxNetworkProps) {
    super(scope, id);
    this.mode = props.mode;
    const isolated = props.mode === 'isolated';
    const egress = props.mode === 'egress';
    const subnetType = egress ? SubnetType.PRIVATE_WITH_EGRESS : SubnetType.PRIVATE_ISOLATED;

    this.vpc = new Vpc(this, 'Vpc', {
      ipAddresses: IpAddresses.cidr('10.20.0.0/16'),
      // Named explicitly: in this environment-agnostic stack maxAzs would stop at 2 and pick zones by
      // index, some of which Lambda or Fargate do not support.
      availabilityZones: props.availabilityZones,
      // The sandbox subnets come first, so they keep their CIDRs (and are updated, not replaced) when
      // a deployment switches between the modes; only routes and the public subnet come and go.
      subnetConfiguration: [
        { name: 'Sandbox', subnetType, cidrMask: 20 },
        // Egress mode: only the NAT gateway lives here; it has its own Elastic IP, nothing else gets a public one.
        // Public mode: the tasks, with the address RunTask asks for (not one on launch). The same name and
        // size in both, so switching between them updates the subnet instead of replacing it.
        ...(isolated ? [] : [{ name: 'Public', subnetType: SubnetType.PUBLIC, cidrMask: 24, mapPublicIpOnLaunch: false }]),
      ],
      natGateways: egress ? 1 : 0,
      createInternetGateway: !isolated,
      // The default security group (which nothing here uses) is stripped of its rules.
      restrictDefaultSecurityGroup: true,
    });
    // CDK's function that strips that group runs during deploys only; its logs get the deployment's
    // retention. (Its role is a raw CloudFormation role with AWSLambdaBasicExecutionRole, left as it is.)
    const restrictProvider = Stack.of(this).node.findChild(RESTRICT_DEFAULT_SG_PROVIDER_ID);
    giveLogGroup(this, 'RestrictDefaultSgLogs', restrictProvider.node.findChild('Handler') as CfnResource, props.logRetention);
    this.subnets = { subnetType };
    this.taskPublicIp = props.mode === 'public';
    this.taskSubnets = this.taskPublicIp ? { subnetType: SubnetType.PUBLIC } : this.subnets;

    this.flowLogGroup = new LogGroup(this, 'FlowLogs', { retention: props.logRetention });
    this.vpc.addFlowLog('FlowLog', {
      destination: FlowLogDestination.toCloudWatchLogs(this.flowLogGroup),
      trafficType: FlowLogTrafficType.ALL,
    });

    // Gateway endpoints cost nothing: the sandbox-step function reaches S3 and DynamoDB through them,
    // and Fargate pulls image layers (stored in S3) through the S3 one.
    const endpointSubnets = this.taskPublicIp ? [this.subnets, this.taskSubnets] : [this.subnets];
    this.s3Endpoint = this.vpc.addGatewayEndpoint('S3', { service: GatewayVpcEndpointAwsService.S3, subnets: endpointSubnets });
    this.dynamoDbEndpoint = this.vpc.addGatewayEndpoint('DynamoDb', {
      service: GatewayVpcEndpointAwsService.DYNAMODB,
      subnets: endpointSubnets,
    });

    this.interfaceEndpoints = [];
    if (isolated) {
      this.endpointSecurityGroup = new SecurityGroup(this, 'EndpointSg', {
        vpc: this.vpc,
        description: 'Interface endpoints (ECR, Logs) of the sandbox VPC: HTTPS from sandbox tasks only',
        allowAllOutbound: false,
      });
      const services = {
        EcrApi: InterfaceVpcEndpointAwsService.ECR,
        EcrDocker: InterfaceVpcEndpointAwsService.ECR_DOCKER,
        Logs: InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
      };
      for (const [name, service] of Object.entries(services)) {
        this.interfaceEndpoints.push(
          this.vpc.addInterfaceEndpoint(name, {
            service,
            subnets: this.subnets,
            privateDnsEnabled: true,
            securityGroups: [this.endpointSecurityGroup],
            // Ingress is granted to the sandbox task security group only, not to the whole VPC.
            open: false,
          }),
        );
      }
    }
  }
}
