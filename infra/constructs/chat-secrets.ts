// The credentials of the chat platforms a deployment serves: one secret per platform, its JSON the
// shape of the platform's zod schema (shared/platforms/<name>/descriptor.ts). The stack creates it
// with a random value in the field the platform names (so nothing verifies until the operator stores
// the real one) and placeholders in the others; the operator then writes the real values:
//   aws secretsmanager put-secret-value --secret-id <{Title}SecretName output> --secret-string '<the JSON>'
// Every function that talks to chat gets each served platform's secret ARN and may read exactly
// those secrets' values.
import { Stack } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type * as z from 'zod';
import type { PlatformDescriptor, PlatformSecret } from '../../shared/platforms/platform.ts';
import { derivedName, type DerivedNameKey } from '../stack-names.ts';

/** A platform's secret; its construct id is the platform's title, which its logical id starts with. */
export class ChatSecret<S extends z.ZodType, G extends string> extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, platform: Pick<PlatformDescriptor, 'name' | 'title'> & { readonly secret: PlatformSecret<S, G> }) {
    super(scope, platform.title);
    const { generated, placeholders, shape } = platform.secret;
    const template: Omit<z.infer<S>, G> = placeholders;
    this.secret = new Secret(this, `${platform.title}Credentials`, {
      // Prefixed with the stack name so two deployments in one account do not collide.
      secretName: derivedName(`${platform.name}Secret` as DerivedNameKey, Stack.of(this).stackName),
      description: `${platform.title} app credentials: ${shape}. Replace the placeholders.`,
      generateSecretString: {
        secretStringTemplate: JSON.stringify(template),
        generateStringKey: generated,
        excludePunctuation: true,
        passwordLength: 32,
      },
    });
  }
}

/** A platform the deployment serves, as the functions that talk to chat get it. */
export interface ServedPlatform {
  readonly platform: PlatformDescriptor;
  readonly secret: ISecret;
  /** Variables of the platform's own from the deployment settings (Teams: multi-tenant). */
  readonly environment: Readonly<Record<string, string>>;
}

/** The served platforms: at least one. */
export type ChatSecrets = readonly ServedPlatform[];

/**
 * Read the secret's value, nothing else: secret.grantRead() adds DescribeSecret, which no function
 * calls. The secret is encrypted with the account's AWS managed key, which needs no key grant.
 */
export function grantSecretValue(secret: ISecret, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
  );
}

export function useChatSecrets(fn: LambdaFunction, secrets: ChatSecrets): void {
  for (const { platform, secret, environment } of secrets) {
    fn.addEnvironment(platform.env.secretArn, secret.secretArn);
    for (const [name, value] of Object.entries(environment)) fn.addEnvironment(name, value);
    grantSecretValue(secret, fn);
  }
}
