// What `npm run doctor` checks of a deployed stack, each as one line: ok, or the problem and what to
// do about it. The clients are given (the CLI builds them from the standard AWS chain; the tests
// point them at the local cloud); nothing here reads the environment.
import { GetCallerIdentityCommand, type STSClient } from '@aws-sdk/client-sts';
import { DescribeStacksCommand, type CloudFormationClient, type Output } from '@aws-sdk/client-cloudformation';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ConverseCommand, type BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { DescribeImagesCommand, type ECRClient } from '@aws-sdk/client-ecr';
import { describeFailure } from '../../shared/failures.ts';
import { parseSlackSecret } from '../../shared/slack-credentials.ts';
import { parseEcrImage } from '../../infra/image-uri.ts';
import { BOT_TOKEN_PLACEHOLDER } from '../../infra/constructs/slack-secret.ts';

export interface DoctorDeps {
  stackName: string;
  sts: STSClient;
  cloudFormation: CloudFormationClient;
  secrets: SecretsManagerClient;
  bedrock: BedrockRuntimeClient;
  ecr: ECRClient;
  /** Base URL of the Slack Web API, ending in a slash. */
  slackApiUrl: string;
  fetch: typeof fetch;
  /** How long the webhook and Slack may take to answer. */
  timeoutMs: number;
}

export interface CheckResult {
  check: string;
  status: 'ok' | 'problem' | 'skipped';
  detail: string;
  /** What to do about a problem. */
  fix?: string;
}

const ok = (check: string, detail: string): CheckResult => ({ check, status: 'ok', detail });
const problem = (check: string, detail: string, fix: string): CheckResult => ({ check, status: 'problem', detail, fix });
const skipped = (check: string, detail: string): CheckResult => ({ check, status: 'skipped', detail });

const errorText = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** The outputs the checks read; a stack without them was deployed by an older version. */
const REQUIRED_OUTPUTS = ['SlackEventsUrl', 'SlackSecretName', 'ModelId', 'SandboxImageUri'] as const;
type Outputs = Record<(typeof REQUIRED_OUTPUTS)[number], string>;

async function credentials(deps: DoctorDeps): Promise<CheckResult> {
  const name = 'credentials';
  let region: string;
  try {
    region = await deps.sts.config.region();
  } catch (error) {
    return problem(name, `no AWS Region (${errorText(error)})`, 'Set AWS_REGION (or a region in your AWS profile), or pass --region.');
  }
  try {
    const identity = await deps.sts.send(new GetCallerIdentityCommand({}));
    return ok(name, `account ${identity.Account} as ${identity.Arn}, Region ${region}`);
  } catch (error) {
    return problem(
      name,
      `STS GetCallerIdentity failed in ${region}: ${errorText(error)}`,
      'Configure AWS credentials for the account you deployed to: AWS_PROFILE (after `aws sso login` for SSO), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.',
    );
  }
}

async function stack(deps: DoctorDeps): Promise<{ result: CheckResult; outputs?: Outputs }> {
  const name = 'stack';
  const region = await deps.cloudFormation.config.region();
  let found;
  try {
    found = (await deps.cloudFormation.send(new DescribeStacksCommand({ StackName: deps.stackName }))).Stacks?.[0];
  } catch (error) {
    const missing = /does not exist/i.test(errorText(error));
    return {
      result: problem(
        name,
        missing ? `no stack ${deps.stackName} in ${region}` : `CloudFormation DescribeStacks failed: ${errorText(error)}`,
        missing
          ? 'Deploy it (`npx cdk deploy`), or name the stack you deployed (--stack, the stackName setting) and its Region (--region).'
          : 'The credentials need cloudformation:DescribeStacks on the stack.',
      ),
    };
  }
  const status = found?.StackStatus ?? 'UNKNOWN';
  if (!/_COMPLETE$/.test(status) || /^(ROLLBACK|DELETE)_COMPLETE$/.test(status)) {
    return {
      result: problem(
        name,
        `${deps.stackName} is ${status}`,
        /IN_PROGRESS$/.test(status)
          ? 'Wait for the deploy to finish, then run the doctor again.'
          : 'Look at the stack events in the CloudFormation console for the failed resource, fix it, and deploy again.',
      ),
    };
  }
  const values = Object.fromEntries((found?.Outputs ?? []).map((o: Output) => [o.OutputKey, o.OutputValue]));
  const absent = REQUIRED_OUTPUTS.filter((key) => !values[key]);
  if (absent.length > 0) {
    return {
      result: problem(
        name,
        `${deps.stackName} (${status}) has no output ${absent.join(', ')}`,
        'Deploy this version of the stack (`npx cdk deploy`).',
      ),
    };
  }
  return { result: ok(name, `${deps.stackName} is ${status}`), outputs: values as Outputs };
}

async function slackApi(deps: DoctorDeps, method: string, token: string): Promise<Record<string, unknown>> {
  const response = await deps.fetch(new URL(method, deps.slackApiUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
    signal: AbortSignal.timeout(deps.timeoutMs),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function slackSecret(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'slack secret';
  const put = `Put the Slack app's credentials into it: aws secretsmanager put-secret-value --secret-id ${outputs.SlackSecretName} --secret-string '{"signingSecret":"<Basic Information, Signing Secret>","botToken":"xoxb-<Install App, Bot User OAuth Token>"}'`;
  let credentials;
  try {
    const value = await deps.secrets.send(new GetSecretValueCommand({ SecretId: outputs.SlackSecretName }));
    credentials = parseSlackSecret(value.SecretString);
  } catch (error) {
    return problem(name, `${outputs.SlackSecretName} could not be read: ${errorText(error)}`, put);
  }
  const placeholders: string[] = [];
  if (credentials.botToken === BOT_TOKEN_PLACEHOLDER) placeholders.push(`the bot token is the placeholder ${BOT_TOKEN_PLACEHOLDER}`);
  // The deploy generates a signing secret with upper-case letters; Slack's are lower-case hex.
  if (/[A-Z]/.test(credentials.signingSecret)) placeholders.push('the signing secret is still the random one the deploy generated');
  if (placeholders.length > 0) return problem(name, `${outputs.SlackSecretName}: ${placeholders.join('; ')}`, put);
  try {
    const answer = await slackApi(deps, 'auth.test', credentials.botToken);
    if (answer.ok !== true) {
      return problem(
        name,
        `Slack refuses the bot token (auth.test: ${String(answer.error)})`,
        `The token may be revoked or from another app. ${put}`,
      );
    }
    return ok(name, `set; the bot token is @${String(answer.user)}'s in ${String(answer.team)}`);
  } catch (error) {
    return problem(
      name,
      `Slack's auth.test did not answer: ${errorText(error)}`,
      'Check that this machine can reach slack.com, then run the doctor again.',
    );
  }
}

async function webhook(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'webhook';
  const url = outputs.SlackEventsUrl;
  try {
    // An unsigned request must be refused: 401 proves the route, the function and its verification.
    const response = await deps.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
    if (response.status === 401) return ok(name, `${url} answers (401 to an unsigned request, as it should)`);
    return problem(
      name,
      `${url} answered ${response.status} to an unsigned request, not 401`,
      response.status >= 500
        ? "The webhook function fails: read its log group in CloudWatch (`aws logs tail` the stack's Webhook function log group)."
        : 'The URL does not reach the webhook: use the SlackEventsUrl output exactly, and deploy again if the API was changed.',
    );
  } catch (error) {
    return problem(
      name,
      `${url} did not answer within ${deps.timeoutMs} ms: ${errorText(error)}`,
      'Check the SlackEventsUrl output and that this machine can reach it; then run the doctor again.',
    );
  }
}

async function model(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'bedrock';
  const modelId = outputs.ModelId;
  try {
    // One token: the cheapest call that proves access, and, made by an administrator, the first
    // call that subscribes the account to a third-party model.
    await deps.bedrock.send(
      new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: 1 } }),
    );
    return ok(name, `${modelId} answers`);
  } catch (error) {
    const failure =
      error instanceof Error ? { errorType: error.name, errorMessage: error.message } : { errorType: 'Error', errorMessage: String(error) };
    return problem(name, `${modelId}: ${errorText(error)}`, describeFailure(failure, modelId));
  }
}

async function sandboxImage(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'sandbox image';
  const uri = outputs.SandboxImageUri;
  const image = parseEcrImage(uri);
  if (!image) return ok(name, `${uri} is not in ECR: not checked (a public registry's image)`);
  const imageId = image.digest ? { imageDigest: image.digest } : { imageTag: image.tag ?? 'latest' };
  try {
    await deps.ecr.send(
      new DescribeImagesCommand({ registryId: image.account, repositoryName: image.repositoryName, imageIds: [imageId] }),
    );
    return ok(name, `${uri} is in ECR`);
  } catch (error) {
    return problem(
      name,
      `${uri}: ${errorText(error)}`,
      /ImageNotFound|RepositoryNotFound/.test(errorText(error))
        ? "The image is not there: if the deploy builds it, deploy again (`npx cdk deploy`) and read the image build's CodeBuild log group if it fails; with sandboxImageUri, push that image first."
        : 'The credentials need ecr:DescribeImages on the repository.',
    );
  }
}

/** Every check, in order; those that need the stack are skipped without it. */
export async function runDoctor(deps: DoctorDeps): Promise<CheckResult[]> {
  const first = await credentials(deps);
  if (first.status !== 'ok')
    return [first, ...['stack', 'slack secret', 'webhook', 'bedrock', 'sandbox image'].map((c) => skipped(c, 'needs credentials'))];
  const found = await stack(deps);
  if (!found.outputs)
    return [first, found.result, ...['slack secret', 'webhook', 'bedrock', 'sandbox image'].map((c) => skipped(c, 'needs the stack'))];
  const outputs = found.outputs;
  const rest = await Promise.all([slackSecret(deps, outputs), webhook(deps, outputs), model(deps, outputs), sandboxImage(deps, outputs)]);
  return [first, found.result, ...rest];
}

/** One line per check: `ok`, `problem` (with what to do) or `skipped`. */
export function formatReport(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.check.length));
  return results
    .map(
      (r) =>
        `${r.status.padEnd(8)}${r.check.padEnd(width + 2)}${r.detail}${r.fix ? `\n${' '.repeat(width + 10)}what to do: ${r.fix}` : ''}`,
    )
    .join('\n');
}
