// DNS out of the isolated sandbox VPC: the VPC resolver answers queries for any name by asking the
// internet's name servers, which a command could use as a channel out (data encoded in the names it
// looks up under a domain whose name server someone watches). A Route 53 Resolver DNS Firewall on
// the VPC answers only AWS service names (*.amazonaws.com: the endpoints, S3 and DynamoDB) and
// NXDOMAIN for everything else. It fails closed. Egress and public modes reach the internet anyway: no firewall.
import { CfnFirewallDomainList, CfnFirewallRuleGroup, CfnFirewallRuleGroupAssociation } from 'aws-cdk-lib/aws-route53resolver';
import { Construct } from 'constructs';
import type { SandboxNetwork } from './sandbox-network.ts';

/** The names the sandbox VPC may resolve. */
export const SANDBOX_RESOLVABLE_DOMAINS = ['amazonaws.com.', '*.amazonaws.com.'];

export class SandboxDnsFirewall extends Construct {
  readonly ruleGroup?: CfnFirewallRuleGroup;

  constructor(scope: Construct, id: string, props: { network: SandboxNetwork }) {
    super(scope, id);
    if (props.network.mode !== 'isolated') return;
    const aws = new CfnFirewallDomainList(this, 'AwsServices', { domains: SANDBOX_RESOLVABLE_DOMAINS });
    const everything = new CfnFirewallDomainList(this, 'Everything', { domains: ['*'] });
    this.ruleGroup = new CfnFirewallRuleGroup(this, 'Rules', {
      firewallRules: [
        { priority: 100, firewallDomainListId: aws.attrId, action: 'ALLOW' },
        { priority: 200, firewallDomainListId: everything.attrId, action: 'BLOCK', blockResponse: 'NXDOMAIN' },
      ],
    });
    new CfnFirewallRuleGroupAssociation(this, 'Association', {
      firewallRuleGroupId: this.ruleGroup.attrId,
      vpcId: props.network.vpc.vpcId,
      priority: 101,
      mutationProtection: 'DISABLED',
    });
  }
}
