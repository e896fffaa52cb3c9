// One CloudWatch dashboard for the runtime: what runs, what fails, how long it takes, what it uses and
// costs, where prompts wait, which sandboxes run, and the state of every alarm. The runtime's own
// metrics are the deployment totals (runtime-metrics.ts); cost per channel comes from the agent-step
// function's "model step" log lines through Logs Insights, since a channel is no metric dimension.
import { Duration } from 'aws-cdk-lib';
import {
  type Alarm,
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  GraphWidgetView,
  type IMetric,
  LogQueryVisualizationType,
  LogQueryWidget,
  type IWidget,
  Stats,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { MetricName } from '../../shared/observability/metric-names.ts';
import { runtimeMetric } from './runtime-metrics.ts';

const PERIOD = Duration.minutes(5);
const WIDTH = 12;
const HEIGHT = 6;

/** The message of the agent-step function's log line per model step (shared/run/steps/model.ts). */
export const MODEL_STEP_LOG_MESSAGE = 'model step';

/** Logs Insights: the channels whose model steps cost most over the dashboard's time range. */
export const TOP_CHANNELS_QUERY = [
  `filter message = "${MODEL_STEP_LOG_MESSAGE}" and ispresent(costUsd)`,
  'stats sum(costUsd) as costUsd, count(*) as modelSteps by channel',
  'sort costUsd desc',
  'limit 10',
];

/** The dashboard's widget titles, in order. */
export const DASHBOARD_WIDGETS = {
  runs: 'Runs',
  failures: 'Failures',
  latency: 'Latency p50 / p99 (ms)',
  tokens: 'Tokens',
  cost: 'Cost per day (USD)',
  topChannels: 'Top channels by model cost (USD)',
  queues: 'Queues',
  sandboxes: 'Sandboxes',
  alarms: 'Alarms',
} as const;

export interface RuntimeDashboardProps {
  readonly stateMachine: IStateMachine;
  /** The runtime's functions by role. */
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly agentStepLogGroup: ILogGroup;
  readonly inbox: IQueue;
  /** Every dead-letter queue (and failed-invocation queue), by what it holds. */
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
  readonly alarms: readonly Alarm[];
}

export class RuntimeDashboard extends Construct {
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: RuntimeDashboardProps) {
    super(scope, id);
    const total = (name: MetricName, statistic = Stats.SUM, period = PERIOD, label: string = name) =>
      runtimeMetric(this, name, { statistic, period, label });
    const graph = (title: string, left: IMetric[], right: IMetric[] = [], extra: Partial<{ view: GraphWidgetView }> = {}) =>
      new GraphWidget({ title, left, right, width: WIDTH, height: HEIGHT, ...extra });
    const percentiles = (name: MetricName) => [Stats.p(50), Stats.p(99)].map((p) => total(name, p, PERIOD, `${name} ${p}`));
    const sfn = props.stateMachine;

    const widgets: IWidget[] = [
      graph(DASHBOARD_WIDGETS.runs, [
        total('RunsStarted'),
        total('RunsFinished'),
        total('RunsStopped'),
        total('RunsFailed'),
        total('BudgetRefusals'),
        total('BusyReplies'),
      ]),
      graph(
        DASHBOARD_WIDGETS.failures,
        [
          total('RunsFailed'),
          sfn.metricFailed({ period: PERIOD, statistic: Stats.SUM, label: 'Executions failed' }),
          sfn.metricTimedOut({ period: PERIOD, statistic: Stats.SUM, label: 'Executions timed out' }),
          sfn.metricAborted({ period: PERIOD, statistic: Stats.SUM, label: 'Executions aborted' }),
          total('ToolErrors'),
        ],
        Object.entries(props.functions).map(([role, fn]) =>
          fn.metricErrors({ period: PERIOD, statistic: Stats.SUM, label: `${role} errors` }),
        ),
      ),
      graph(DASHBOARD_WIDGETS.latency, [
        ...percentiles('RunDuration'),
        ...percentiles('QueueWait'),
        ...percentiles('ModelLatency'),
        ...percentiles('TimeToFirstToken'),
      ]),
      graph(
        DASHBOARD_WIDGETS.tokens,
        [total('InputTokens'), total('OutputTokens'), total('CacheReadTokens'), total('CacheWriteTokens')],
        [total('ModelSteps'), total('ModelThrottles')],
      ),
      graph(DASHBOARD_WIDGETS.cost, [total('CostUsd', Stats.SUM, Duration.days(1), 'Model and sandbox cost')], [], {
        view: GraphWidgetView.BAR,
      }),
      new LogQueryWidget({
        title: DASHBOARD_WIDGETS.topChannels,
        logGroupNames: [props.agentStepLogGroup.logGroupName],
        queryLines: TOP_CHANNELS_QUERY,
        view: LogQueryVisualizationType.TABLE,
        width: WIDTH,
        height: HEIGHT,
      }),
      graph(
        DASHBOARD_WIDGETS.queues,
        [
          props.inbox.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: Stats.MAXIMUM, label: 'Inbox waiting' }),
          props.inbox.metricApproximateNumberOfMessagesNotVisible({ period: PERIOD, statistic: Stats.MAXIMUM, label: 'Inbox in flight' }),
          ...Object.entries(props.deadLetterQueues).map(([label, queue]) =>
            queue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: Stats.MAXIMUM, label }),
          ),
        ],
        [props.inbox.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: Stats.MAXIMUM, label: 'Oldest inbox message (s)' })],
      ),
      graph(
        DASHBOARD_WIDGETS.sandboxes,
        [total('SandboxesRunning', Stats.MAXIMUM), total('SandboxSeconds', Stats.SUM)],
        [total('OldestSandboxAge', Stats.MAXIMUM, PERIOD, 'OldestSandboxAge (s)')],
      ),
      new AlarmStatusWidget({ title: DASHBOARD_WIDGETS.alarms, alarms: [...props.alarms], width: WIDTH, height: HEIGHT }),
    ];
    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.days(1) });
    for (let i = 0; i < widgets.length; i += 2) this.dashboard.addWidgets(...widgets.slice(i, i + 2));
  }
}
