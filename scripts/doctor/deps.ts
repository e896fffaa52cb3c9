// What `npm run doctor` checks with: the AWS clients (the CLI builds them from the standard AWS
// chain; the tests point them at the local cloud) and the few settings of the run. Nothing in the
// checks reads the environment.
import type { STSClient } from '@aws-sdk/client-sts';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import type { ECRClient } from '@aws-sdk/client-ecr';
import type { ECSClient } from '@aws-sdk/client-ecs';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import type { SNSClient } from '@aws-sdk/client-sns';

export interface DoctorClients {
  sts: STSClient;
  cloudFormation: CloudFormationClient;
  secrets: SecretsManagerClient;
  bedrock: BedrockRuntimeClient;
  ecr: ECRClient;
  ecs: ECSClient;
  iam: IAMClient;
  lambda: LambdaClient;
  cloudWatch: CloudWatchClient;
  serviceQuotas: ServiceQuotasClient;
  sns: SNSClient;
  s3: S3Client;
}

export interface DoctorDeps extends DoctorClients {
  stackName: string;
  /** Base URL of the Slack Web API, ending in a slash. */
  slackApiUrl: string;
  /** Where the Teams app gets its tokens; default Microsoft's for the app's tenant. */
  teamsTokenUrl?: string;
  fetch: typeof fetch;
  /** How long the webhooks, Slack and Microsoft may take to answer. */
  timeoutMs: number;
  /** The sandbox round trip: whether to make it, how long a task may take to run, how often to look. */
  sandbox: { run: boolean; timeoutMs: number; pollMs: number };
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}
