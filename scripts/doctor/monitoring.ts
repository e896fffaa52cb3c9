// What the stack's monitoring says now: alarms in ALARM, functions that failed lately, and whether
// anyone receives the alarms (an email subscription nobody confirmed receives nothing).
import { GetMetricDataCommand, paginateDescribeAlarms, type MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { paginateListStackResources } from '@aws-sdk/client-cloudformation';
import { paginateListSubscriptionsByTopic, type Subscription } from '@aws-sdk/client-sns';
import type { DoctorDeps } from './deps.ts';
import { errorText, ok, problem, type CheckResult } from './result.ts';

/** How far back a function's errors count as recent. */
export const RECENT_ERRORS_HOURS = 24;
/** GetMetricData takes at most this many queries. */
const QUERIES_PER_CALL = 500;

export async function alarms(deps: DoctorDeps, topicArn: string): Promise<CheckResult> {
  const name = 'alarms';
  const firing: MetricAlarm[] = [];
  try {
    // Every alarm of the stack notifies its topic.
    for await (const page of paginateDescribeAlarms({ client: deps.cloudWatch }, { ActionPrefix: topicArn, StateValue: 'ALARM' })) {
      firing.push(...(page.MetricAlarms ?? []));
    }
  } catch (error) {
    return problem(name, `CloudWatch DescribeAlarms failed: ${errorText(error)}`, 'The credentials need cloudwatch:DescribeAlarms.');
  }
  if (firing.length === 0) return ok(name, "none of the stack's alarms is in ALARM");
  return problem(
    name,
    `${firing.length} in ALARM: ${firing.map((a) => `${a.AlarmName} (${a.StateReason ?? 'no reason given'})`).join('; ')}`,
    firing.map((a) => `${a.AlarmName}: ${a.AlarmDescription ?? 'see the dashboard (DashboardUrl output)'}`).join(' '),
  );
}

async function stackFunctions(deps: DoctorDeps): Promise<string[]> {
  const names: string[] = [];
  for await (const page of paginateListStackResources({ client: deps.cloudFormation }, { StackName: deps.stackName })) {
    for (const resource of page.StackResourceSummaries ?? []) {
      if (resource.ResourceType === 'AWS::Lambda::Function' && resource.PhysicalResourceId) names.push(resource.PhysicalResourceId);
    }
  }
  return names;
}

export async function functionErrors(deps: DoctorDeps): Promise<CheckResult> {
  const name = 'function errors';
  const errors = new Map<string, number>();
  let functions: string[];
  try {
    functions = await stackFunctions(deps);
    const end = new Date(deps.now());
    const start = new Date(end.getTime() - RECENT_ERRORS_HOURS * 3600_000);
    for (let offset = 0; offset < functions.length; offset += QUERIES_PER_CALL) {
      const batch = functions.slice(offset, offset + QUERIES_PER_CALL);
      const answer = await deps.cloudWatch.send(
        new GetMetricDataCommand({
          StartTime: start,
          EndTime: end,
          MetricDataQueries: batch.map((fn, index) => ({
            Id: `f${offset + index}`,
            MetricStat: {
              Metric: { Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: fn }] },
              Period: 3600,
              Stat: 'Sum',
            },
          })),
        }),
      );
      for (const result of answer.MetricDataResults ?? []) {
        const total = (result.Values ?? []).reduce((sum, value) => sum + value, 0);
        if (total > 0) errors.set(functions[Number(result.Id?.slice(1))]!, total);
      }
    }
  } catch (error) {
    return problem(
      name,
      `reading the functions' errors failed: ${errorText(error)}`,
      'The credentials need cloudformation:ListStackResources and cloudwatch:GetMetricData.',
    );
  }
  if (errors.size === 0) return ok(name, `none of the ${functions.length} functions failed in the last ${RECENT_ERRORS_HOURS} hours`);
  const list = [...errors].map(([fn, count]) => `${fn} (${count})`);
  return problem(
    name,
    `failed in the last ${RECENT_ERRORS_HOURS} hours: ${list.join(', ')}`,
    `Read each one's log: aws logs tail /aws/lambda/<function> --since ${RECENT_ERRORS_HOURS}h (the errors name the cause; the alarms line says which are still failing).`,
  );
}

export async function alarmSubscription(deps: DoctorDeps, topicArn: string): Promise<CheckResult> {
  const name = 'alarm email';
  const subscriptions: Subscription[] = [];
  try {
    for await (const page of paginateListSubscriptionsByTopic({ client: deps.sns }, { TopicArn: topicArn })) {
      subscriptions.push(...(page.Subscriptions ?? []));
    }
  } catch (error) {
    return problem(
      name,
      `SNS ListSubscriptionsByTopic failed: ${errorText(error)}`,
      'The credentials need sns:ListSubscriptionsByTopic on the alarm topic.',
    );
  }
  const subscribe = (address: string) => `aws sns subscribe --topic-arn ${topicArn} --protocol email --notification-endpoint ${address}`;
  if (subscriptions.length === 0) {
    return problem(
      name,
      'nobody is subscribed to the alarm topic: the alarms reach no one',
      `Deploy with -c alarmEmail=you@example.com, or subscribe someone: ${subscribe('you@example.com')}.`,
    );
  }
  const pending = subscriptions.filter((s) => s.SubscriptionArn === 'PendingConfirmation');
  if (pending.length > 0) {
    return problem(
      name,
      `not confirmed: ${pending.map((s) => `${s.Endpoint} (${s.Protocol})`).join(', ')}: SNS sends nothing there until it is`,
      `Follow the link in the mail "AWS Notification - Subscription Confirmation" (look in spam too). It expires after 3 days; for a new one: ${subscribe(pending[0]!.Endpoint ?? 'the address')}.`,
    );
  }
  return ok(name, `the alarms reach ${subscriptions.map((s) => `${s.Endpoint} (${s.Protocol})`).join(', ')}`);
}
