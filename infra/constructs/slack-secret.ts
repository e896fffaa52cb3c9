// The Slack app's credentials. The stack creates the secret with a random signing secret (so no
// request verifies until the operator stores the real one) and a placeholder bot token; the
// operator then writes the real values:
//   aws secretsmanager put-secret-value --secret-id <SlackSecretName output> \
//     --secret-string '{"signingSecret":"...","botToken":"xoxb-..."}'
import { Stack } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { derivedName } from '../stack-names.ts';

/** Shape of the secret's JSON value, as the functions read it. */
export interface SlackCredentials {
  readonly signingSecret: string;
  readonly botToken: string;
}

export const BOT_TOKEN_PLACEHOLDER = 'xoxb-replace-me';

export class SlackSecret extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const template: Omit<SlackCredentials, 'signingSecret'> = { botToken: BOT_TOKEN_PLACEHOLDER };
    this.secret = new Secret(this, 'SlackCredentials', {
      // Prefixed with the stack name so two deployments in one account do not collide.
      secretName: derivedName('slackSecret', Stack.of(this).stackName),
      description: 'Slack app credentials: {"signingSecret": "...", "botToken": "xoxb-..."}. Replace the placeholders.',
      generateSecretString: {
        secretStringTemplate: JSON.stringify(template),
        generateStringKey: 'signingSecret' satisfies keyof SlackCredentials,
        excludePunctuation: true,
        passwordLength: 32,
      },
    });
  }
}

/**
 * Read the secret's value, nothing else: secret.grantRead() adds DescribeSecret, which no function
 * calls. The secret is encrypted with the account's AWS managed key, which needs no key grant.
 */
export function grantSecretValue(secret: ISecret, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
  );
}
