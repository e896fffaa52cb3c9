// The credentials of the chat platforms a deployment serves (Slack, Teams or both). Every function
// that talks to chat gets each configured secret's ARN and may read exactly those secrets' values.
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { grantSecretValue } from './slack-secret.ts';

export interface ChatSecrets {
  readonly slack?: ISecret;
  readonly teams?: ISecret;
  /** Accept Teams activities from any tenant (a multi-tenant bot registration). */
  readonly teamsMultiTenant?: boolean;
}

export function useChatSecrets(fn: LambdaFunction, secrets: ChatSecrets): void {
  if (secrets.slack) {
    fn.addEnvironment('SLACK_SECRET_ARN', secrets.slack.secretArn);
    grantSecretValue(secrets.slack, fn);
  }
  if (secrets.teams) {
    fn.addEnvironment('TEAMS_SECRET_ARN', secrets.teams.secretArn);
    if (secrets.teamsMultiTenant) fn.addEnvironment('TEAMS_MULTI_TENANT', 'true');
    grantSecretValue(secrets.teams, fn);
  }
}
