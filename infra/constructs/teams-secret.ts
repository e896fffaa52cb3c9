// The Teams app's credentials: the Azure Bot's Microsoft App ID, its client secret and its tenant.
// The stack creates the secret with a random password and placeholders (so no token is issued until
// the operator stores the real values); the operator then writes them:
//   aws secretsmanager put-secret-value --secret-id <TeamsSecretName output> \
//     --secret-string '{"appId":"...","appPassword":"...","tenantId":"..."}'
import { Stack } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { derivedName } from '../stack-names.ts';

/** Shape of the secret's JSON value, as the functions read it. */
export interface TeamsCredentials {
  readonly appId: string;
  readonly appPassword: string;
  readonly tenantId: string;
}

export const TEAMS_PLACEHOLDER = 'replace-me';

export class TeamsSecret extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const template: Omit<TeamsCredentials, 'appPassword'> = { appId: TEAMS_PLACEHOLDER, tenantId: TEAMS_PLACEHOLDER };
    this.secret = new Secret(this, 'TeamsCredentials', {
      secretName: derivedName('teamsSecret', Stack.of(this).stackName),
      description: 'Teams app credentials: {"appId": "...", "appPassword": "...", "tenantId": "..."}. Replace the placeholders.',
      generateSecretString: {
        secretStringTemplate: JSON.stringify(template),
        generateStringKey: 'appPassword' satisfies keyof TeamsCredentials,
        excludePunctuation: true,
        passwordLength: 32,
      },
    });
  }
}
