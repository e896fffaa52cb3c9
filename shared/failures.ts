// Turning a failed step into a short, human message for the thread (details stay in the logs).

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

const ACCESS =
  /CredentialsProviderError|UnrecognizedClientException|InvalidSignatureException|ExpiredToken|AccessDenied|security token|Could not load credentials|ENOTFOUND|ECONNREFUSED|EAI_AGAIN/i;

export function describeFailure(failure: StepFailure, modelId: string): string {
  const text = `${failure.errorType} ${failure.errorMessage}`;
  if (ACCESS.test(text)) {
    return [
      `I can't reach the model (\`${modelId}\`): model access is not configured for this deployment.`,
      'To fix it, give the agent AWS credentials that may call Amazon Bedrock (`bedrock:InvokeModelWithResponseStream`) for this model and enable the model in the Bedrock console,',
      'or, on a local stack, set `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` to a Bedrock-compatible endpoint. Then just ask again in this thread.',
    ].join(' ');
  }
  if (/Throttling|TooManyRequests|ServiceUnavailable|ModelNotReady/i.test(failure.errorType)) {
    return 'The model is overloaded right now and did not answer after several tries. Please ask again in a minute.';
  }
  if (/WorkspaceSyncError/.test(failure.errorType)) {
    return `Saving the files of this thread's sandbox failed: ${failure.errorMessage.slice(0, 300)}. The thread still works: please try again.`;
  }
  if (/ValidationException/i.test(failure.errorType)) {
    return `The model rejected the request: ${failure.errorMessage.slice(0, 300)}`;
  }
  if (/ResourceNotFound/i.test(failure.errorType)) {
    return `The model \`${modelId}\` was not found in this region. Check the model id in settings.json or the deployment.`;
  }
  if (/States\.Timeout|Sandbox\.Timedout|TimedOut/i.test(failure.errorType)) {
    return 'This run took too long and was stopped. You can ask again, perhaps in smaller steps.';
  }
  return `Sorry, something went wrong while answering (${failure.errorType}). The thread still works: please try again.`;
}
