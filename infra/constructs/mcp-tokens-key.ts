// The KMS key that seals people's OAuth tokens to MCP servers (shared/reach/oauth/), each under an
// encryption context naming its person, server and URL. Rotated yearly by KMS. Only the functions that
// read or write tokens may use it (grantSealing); nothing else in the stack is encrypted with it.
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Effect, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';

export class McpTokensKey extends Construct {
  readonly key: Key;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: "Seals people's OAuth tokens to MCP servers",
      enableKeyRotation: true,
      // The tokens are worth nothing without the stack: a person connects again. A key kept after the
      // stack would cost its monthly fee for nothing.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
  }

  /** kms:Encrypt and kms:Decrypt on this key only. */
  grantSealing(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['kms:Encrypt', 'kms:Decrypt'], resources: [this.key.keyArn] }),
    );
  }
}
