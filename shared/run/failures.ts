// Turning a failed step into a short, human message for the thread (details stay in the logs). A
// Bedrock failure on a new deployment says exactly what the operator has to do about it.
import { parseModelId } from '../model/ids.ts';

export interface StepFailure {
  errorType: string;
  errorMessage: string;
}

/** Step Functions' Catch gives `{ Error, Cause }`; a Lambda error's Cause is JSON with errorType/errorMessage. */
export function parseStepFailure(error: { Error?: string; Cause?: string } | undefined): StepFailure {
  const fallback = { errorType: error?.Error ?? 'Error', errorMessage: error?.Cause ?? 'unknown error' };
  if (!error?.Cause) return fallback;
  try {
    const cause = JSON.parse(error.Cause) as { errorType?: string; errorMessage?: string };
    return { errorType: cause.errorType ?? fallback.errorType, errorMessage: cause.errorMessage ?? error.Cause };
  } catch {
    return fallback;
  }
}

const ASK_AGAIN = 'Then just ask again in this thread.';

/** The cross-Region inference profile ids to suggest for a foundation model id. */
function profileIds(modelId: string): string {
  const { foundationModelId } = parseModelId(modelId);
  return `\`us.${foundationModelId}\` (or the \`eu.\`, \`apac.\` or \`global.\` profile, whichever covers your Region)`;
}

const redeployWith = (modelId: string) =>
  `redeploy with \`npx cdk deploy -c modelId=${modelId}\` (the agent may call only the model it was deployed with)`;

interface FailureRule {
  matches(failure: StepFailure, text: string): boolean;
  describe(failure: StepFailure, modelId: string): string;
}

// In order: the first rule that matches describes the failure.
const RULES: FailureRule[] = [
  {
    // Syncing the sandbox's files failed: not the model's doing. Its message quotes an AWS error
    // (the role's ARN, the bucket, the thread's paths), which stays in the logs ('run failed').
    matches: (failure) => /WorkspaceSyncError/.test(failure.errorType),
    describe: () => "Saving the files of this thread's sandbox failed, so I stopped. The thread still works: please try again.",
  },
  {
    // Bedrock's first call to a third-party model subscribes the account through AWS Marketplace,
    // as the caller; the agent's role has no Marketplace permissions, by design.
    matches: (_, text) => /aws-marketplace|marketplace subscription/i.test(text),
    describe: (_, modelId) =>
      [
        `I can't use the model \`${modelId}\` yet: Amazon Bedrock subscribes an AWS account to a third-party model through AWS Marketplace on its first call,`,
        "and this deployment's role may not subscribe (that takes `aws-marketplace:Subscribe` and `aws-marketplace:ViewSubscriptions`, once per account).",
        'To fix it, call the model once as an administrator: run `npm run doctor -- --stack <stack name>` with administrator credentials, or open the model in the Amazon Bedrock console playground.',
        "Anthropic models also need Anthropic's one-time use case form (Bedrock console, Model catalog, the model's page), and the account needs a valid payment method.",
        `The subscription can take up to 15 minutes to complete. ${ASK_AGAIN}`,
      ].join(' '),
  },
  {
    matches: (_, text) => /use case details|use case form/i.test(text),
    describe: (_, modelId) =>
      [
        `I can't use the model \`${modelId}\` yet: Anthropic requires its use case form once per AWS account (or once in the organization's management account) before its models answer.`,
        'To fix it, open the Amazon Bedrock console, Model catalog, choose the model and submit the use case details. It can take up to 15 minutes to take effect.',
        ASK_AGAIN,
      ].join(' '),
  },
  {
    matches: (failure, text) => /ValidationException/i.test(failure.errorType) && /on-demand throughput/i.test(text),
    describe: (_, modelId) =>
      [
        `The model \`${modelId}\` can't be called directly in this Region: it is served only through an inference profile.`,
        `To fix it, use the inference profile id ${profileIds(modelId)}: ${redeployWith(`us.${parseModelId(modelId).foundationModelId}`)}.`,
        ASK_AGAIN,
      ].join(' '),
  },
  {
    // Its message starts with "Access denied", like a credentials problem.
    matches: (failure, text) => /ResourceNotFound/i.test(failure.errorType) && /legacy/i.test(text),
    describe: (_, modelId) =>
      `The model \`${modelId}\` is marked Legacy by its provider and no longer answers this account. To fix it, choose an active model and ${redeployWith('<model id>')}.`,
  },
  {
    // The role's IAM policy allows one model: another id (from settings.json, say) is refused.
    matches: (_, text) => /AccessDenied/i.test(text) && /not authorized to perform: bedrock:/i.test(text),
    describe: (_, modelId) =>
      [
        `This deployment may not call the model \`${modelId}\`: its IAM policy allows only the model set by the deployment setting \`modelId\`.`,
        `To fix it, use that model in settings.json, or ${redeployWith(modelId)}.`,
        ASK_AGAIN,
      ].join(' '),
  },
  {
    matches: (_, text) =>
      /CredentialsProviderError|UnrecognizedClientException|InvalidSignatureException|ExpiredToken|AccessDenied|security token|Could not load credentials|\b(ENOTFOUND|ECONNREFUSED|EAI_AGAIN)\b/i.test(
        text,
      ),
    describe: (_, modelId) =>
      [
        `I can't reach the model (\`${modelId}\`): model access is not configured for this deployment.`,
        'To fix it, give the agent AWS credentials that may call Amazon Bedrock (`bedrock:InvokeModelWithResponseStream`) for this model,',
        'or, on a local stack, set `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` to a Bedrock-compatible endpoint.',
        ASK_AGAIN,
      ].join(' '),
  },
  {
    matches: (failure) => /Throttling|TooManyRequests|ServiceUnavailable|ModelNotReady/i.test(failure.errorType),
    describe: () => 'The model is overloaded right now and did not answer after several tries. Please ask again in a minute.',
  },
  {
    matches: (failure, text) => /ResourceNotFound/i.test(failure.errorType) || /model identifier is invalid/i.test(text),
    describe: (_, modelId) =>
      [
        `The model \`${modelId}\` is not available in this deployment's Region.`,
        `To fix it, check the model id against the Amazon Bedrock model catalog for the Region; many models are served only through a cross-Region inference profile such as ${profileIds(modelId)}.`,
        `Then ${redeployWith('<model id>')}.`,
      ].join(' '),
  },
  {
    matches: (failure) => /ValidationException/i.test(failure.errorType),
    describe: (failure) => `The model rejected the request: ${failure.errorMessage.slice(0, 300)}`,
  },
  {
    matches: (failure) => /States\.Timeout|Sandbox\.Timedout|TimedOut/i.test(failure.errorType),
    describe: () => 'This run took too long and was stopped. You can ask again, perhaps in smaller steps.',
  },
];

export function describeFailure(failure: StepFailure, modelId: string): string {
  const text = `${failure.errorType} ${failure.errorMessage}`;
  const rule = RULES.find((candidate) => candidate.matches(failure, text));
  if (rule) return rule.describe(failure, modelId);
  return `Sorry, something went wrong while answering (${failure.errorType}). The thread still works: please try again.`;
}
