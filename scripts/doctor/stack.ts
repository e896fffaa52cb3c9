// The first two checks: whose credentials, and the stack they reach, in the state CloudFormation
// left it in, with its outputs.
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { DescribeStacksCommand, type Output } from '@aws-sdk/client-cloudformation';
import type { DoctorDeps } from './deps.ts';
import { errorText, ok, problem, type CheckResult, type Outputs } from './result.ts';

const CONFIGURE_CREDENTIALS =
  'Configure AWS credentials for the account you deployed to: AWS_PROFILE (after `aws sso login` for SSO), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.';

export async function credentials(deps: DoctorDeps): Promise<CheckResult> {
  const name = 'credentials';
  // Credentials first: without any, the Region is not what is wrong.
  try {
    await deps.sts.config.credentials();
  } catch (error) {
    return problem(name, `no AWS credentials found (${errorText(error)})`, CONFIGURE_CREDENTIALS);
  }
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
      `${CONFIGURE_CREDENTIALS} An expired SSO session needs \`aws sso login\` again.`,
    );
  }
}

/** What a stack's status means for the operator; `usable`: its resources and outputs are there to check. */
function statusProblem(stackName: string, status: string): { fix: string; usable: boolean } | undefined {
  if (/^(CREATE|UPDATE|IMPORT)_COMPLETE$/.test(status)) return undefined;
  const events = `Find the first failed resource in the stack's events (\`aws cloudformation describe-stack-events --stack-name ${stackName}\`, or the CloudFormation console), fix its cause`;
  if (/IN_PROGRESS$/.test(status)) return { fix: 'Wait for the deploy to finish, then run the doctor again.', usable: false };
  if (status === 'UPDATE_ROLLBACK_COMPLETE' || status === 'IMPORT_ROLLBACK_COMPLETE') {
    return {
      fix: `The last deploy failed and was rolled back: the stack runs the version before it. ${events}, and deploy again.`,
      usable: true,
    };
  }
  if (status === 'UPDATE_ROLLBACK_FAILED') {
    return {
      fix: `The last deploy failed and so did its rollback. ${events}, then \`aws cloudformation continue-update-rollback --stack-name ${stackName}\`, and deploy again.`,
      usable: true,
    };
  }
  if (status === 'ROLLBACK_COMPLETE' || status === 'ROLLBACK_FAILED' || status === 'CREATE_FAILED') {
    return { fix: `The first deploy failed. ${events}, delete the stack (\`npx cdk destroy\`), and deploy again.`, usable: false };
  }
  return { fix: `${events}, and deploy again.`, usable: false };
}

export async function stack(deps: DoctorDeps): Promise<{ result: CheckResult; outputs?: Outputs }> {
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
  const outputs: Outputs = Object.fromEntries((found?.Outputs ?? []).map((o: Output) => [o.OutputKey, o.OutputValue]));
  const trouble = statusProblem(deps.stackName, status);
  if (trouble)
    return { result: problem(name, `${deps.stackName} is ${status}`, trouble.fix), outputs: trouble.usable ? outputs : undefined };
  return { result: ok(name, `${deps.stackName} is ${status}`), outputs };
}
