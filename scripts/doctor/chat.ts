// The chat platforms the stack serves, each checked the way it is used: the credentials in its
// secret (placeholders left by the deploy, and whether Slack or Microsoft accepts them), and its
// webhook route, which must refuse an unsigned request.
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { BOT_TOKEN_PLACEHOLDER, slackDescriptor } from '../../shared/platforms/slack/descriptor.ts';
import { TEAMS_PLACEHOLDER, teamsDescriptor } from '../../shared/platforms/teams/descriptor.ts';
import { clientCredentialsTokens, defaultTokenUrl } from '../../shared/platforms/teams/token.ts';
import { BOT_SCOPE } from '../../shared/platforms/teams/connector.ts';
import type { DoctorDeps } from './deps.ts';
import { errorText, isAccessDenied, ok, problem, withOutputs, type CheckResult, type Outputs } from './result.ts';

/** The platform's credentials from its secret, or the problem of reading them (a permission, or what to put there). */
async function readCredentials<T>(
  deps: DoctorDeps,
  check: string,
  secretName: string,
  parse: (raw: unknown) => T,
  put: string,
): Promise<{ credentials: T } | { result: CheckResult }> {
  try {
    const value = await deps.secrets.send(new GetSecretValueCommand({ SecretId: secretName }));
    return { credentials: parse(value.SecretString) };
  } catch (error) {
    const fix = isAccessDenied(error) ? `The credentials need secretsmanager:GetSecretValue on ${secretName}.` : put;
    return { result: problem(check, `${secretName} could not be read: ${errorText(error)}`, fix) };
  }
}

const withTimeout =
  (deps: DoctorDeps): typeof fetch =>
  (url, init) =>
    deps.fetch(url, { ...init, signal: AbortSignal.timeout(deps.timeoutMs) });

async function slackApi(deps: DoctorDeps, method: string, token: string): Promise<Record<string, unknown>> {
  const response = await withTimeout(deps)(new URL(method, deps.slackApiUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
  });
  return (await response.json()) as Record<string, unknown>;
}

function slackSecret(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'slack secret';
  return withOutputs(name, outputs, ['SlackSecretName'], async ({ SlackSecretName: secretName }) => {
    const put = `Put the Slack app's credentials into it: aws secretsmanager put-secret-value --secret-id ${secretName} --secret-string '{"signingSecret":"<Basic Information, Signing Secret>","botToken":"xoxb-<Install App, Bot User OAuth Token>"}'`;
    const read = await readCredentials(deps, name, secretName, slackDescriptor.secret.parse, put);
    if ('result' in read) return read.result;
    const { credentials } = read;
    const placeholders: string[] = [];
    if (credentials.botToken === BOT_TOKEN_PLACEHOLDER) placeholders.push(`the bot token is the placeholder ${BOT_TOKEN_PLACEHOLDER}`);
    // The deploy generates a signing secret with upper-case letters; Slack's are lower-case hex.
    if (/[A-Z]/.test(credentials.signingSecret)) placeholders.push('the signing secret is still the random one the deploy generated');
    if (placeholders.length > 0) return problem(name, `${secretName}: ${placeholders.join('; ')}`, put);
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
  });
}

function teamsSecret(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult> {
  const name = 'teams secret';
  return withOutputs(name, outputs, ['TeamsSecretName'], async ({ TeamsSecretName: secretName }) => {
    const put = `Put the Azure Bot's credentials into it: aws secretsmanager put-secret-value --secret-id ${secretName} --secret-string '{"appId":"<Microsoft App ID>","appPassword":"<client secret value>","tenantId":"<App Tenant ID>"}'`;
    const read = await readCredentials(deps, name, secretName, teamsDescriptor.secret.parse, put);
    if ('result' in read) return read.result;
    const { credentials } = read;
    const placeholders = (['appId', 'tenantId'] as const).filter((key) => credentials[key] === TEAMS_PLACEHOLDER);
    if (placeholders.length > 0) {
      return problem(
        name,
        `${secretName}: ${placeholders.join(' and ')} still the placeholder ${TEAMS_PLACEHOLDER} (the app password is the one the deploy generated)`,
        put,
      );
    }
    const tokenUrl = deps.teamsTokenUrl ?? defaultTokenUrl(credentials.tenantId);
    try {
      // The client-credentials grant the functions use to reply: it proves the app id and password.
      await clientCredentialsTokens({ tokenUrl, appId: credentials.appId, appPassword: credentials.appPassword, fetch: withTimeout(deps) })(
        BOT_SCOPE,
      );
      return ok(name, `set; app ${credentials.appId} gets Bot Framework tokens`);
    } catch (error) {
      return problem(
        name,
        `the app's credentials get no token: ${errorText(error)}`,
        `Check the Microsoft App ID, the client secret's value (not its id; secrets expire: Certificates & secrets) and the tenant, in the Azure Bot's app registration. ${put}`,
      );
    }
  });
}

/** An unsigned POST must be refused: 401 proves the route, the function and its verification. */
function webhook(deps: DoctorDeps, outputs: Outputs, name: string, output: string, logGroupOf: string): Promise<CheckResult> {
  return withOutputs(name, outputs, [output], async (values) => {
    const url = values[output]!;
    try {
      const response = await withTimeout(deps)(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      if (response.status === 401) return ok(name, `${url} answers (401 to an unsigned request, as it should)`);
      return problem(
        name,
        `${url} answered ${response.status} to an unsigned request, not 401`,
        response.status >= 500
          ? `The webhook function fails: read its log group (\`aws logs tail\` the stack's ${logGroupOf} function log group).`
          : `The URL does not reach the webhook: use the ${output} output exactly, and deploy again if the API was changed.`,
      );
    } catch (error) {
      return problem(
        name,
        `${url} did not answer within ${deps.timeoutMs} ms: ${errorText(error)}`,
        `Check the ${output} output and that this machine can reach it; then run the doctor again.`,
      );
    }
  });
}

/** The checks of each platform the stack serves (its outputs say which). */
export function chatChecks(deps: DoctorDeps, outputs: Outputs): Promise<CheckResult>[] {
  const checks: Promise<CheckResult>[] = [];
  if (outputs.SlackEventsUrl || outputs.SlackSecretName) {
    checks.push(slackSecret(deps, outputs), webhook(deps, outputs, 'slack webhook', 'SlackEventsUrl', 'Webhook'));
  }
  if (outputs.TeamsMessagingEndpoint || outputs.TeamsSecretName) {
    checks.push(teamsSecret(deps, outputs), webhook(deps, outputs, 'teams webhook', 'TeamsMessagingEndpoint', 'TeamsWebhook'));
  }
  return checks;
}
