// `npm run ops -- <command>`: operator commands, against the local stack (npm start) by default or a
// deployed stack with --stack NAME (credentials from the standard AWS chain).
//   put-event FILE   put an event on the default bus (declared triggers fire on it)
//   metrics          what the functions published: sum, count, p50, p99 per metric
//   runs, stop, pause, resume   the kill switch (scripts/ops/kill-switch.ts)
//   approvals        tool calls waiting for a person, and deciding one (scripts/ops/approvals.ts)
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { cloudWatchMetrics, formatMetrics, localMetrics } from './metrics.ts';
import { openLocalStack } from '../../packages/local-cloud/src/stack-file.ts';
import { loadDotEnv, parseCommandLine } from '../../shared/support/cli-args.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { putEvent, readEventFile } from './put-event.ts';
import { killSwitch, type KillSwitchCommand } from './kill-switch.ts';
import { openStack } from './stack.ts';
import { approvalsCommand } from './approvals.ts';

const USAGE = `usage: npm run ops -- <command> [--stack NAME] [--region REGION]
commands:
  put-event FILE   put the event in FILE ({"source", "detail-type", "detail"}) on the default bus
  metrics [--name METRIC] [--hours N]
                   per metric (one, with --name), its sum, count, p50 and p99, in total and per
                   dimension values; locally since npm start, for --stack from CloudWatch over
                   the last N hours (24)
  runs             list the running runs: thread, requester, started, model steps and cost so far
  stop THREAD...   stop the running run of each thread (the thread is told an operator stopped it)
  stop --all       stop every running run
  pause            start no new run: prompts wait in their threads (each is told), running runs go on
  resume           start new runs again, beginning with the prompts that waited
  approvals        list the tool calls waiting for a person's approval, across the deployment
  approvals approve ID | deny ID [--reason TEXT]
                   decide one (ID as listed), as an approver's click would: its run goes on at once
Without --stack, the commands act on the local stack that npm start wrote to .local/stack.json
(LOCAL_STACK_FILE names another; LOCAL_EVENTBRIDGE_URL and LOCAL_METRICS_URL override its URLs);
these variables may also be set in .env.`;

loadDotEnv();
const { values, positionals } = parseCommandLine('ops', USAGE, {
  allowPositionals: true,
  options: {
    stack: { type: 'string' },
    region: { type: 'string' },
    name: { type: 'string' },
    hours: { type: 'string' },
    reason: { type: 'string' },
    all: { type: 'boolean', default: false },
  },
});
const [command, ...rest] = positionals;
const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};

if (!command) fail(`a command is missing (npm run ops -- --help lists them)`);
const local = values.stack === undefined;
/** The local stack's URL for a service: the variable that overrides it, else the stack file's. */
const localUrl = async (override: string, of: 'eventBridge' | 'metrics') => process.env[override] || (await openLocalStack()).urls[of];

try {
  switch (command) {
    case 'put-event': {
      if (rest.length !== 1) fail(`put-event takes one file\n${USAGE}`);
      const event = await readEventFile(rest[0]!);
      const localEndpoint = local ? await localUrl('LOCAL_EVENTBRIDGE_URL', 'eventBridge') : undefined;
      const eventBridge = local
        ? new EventBridgeClient({
            endpoint: localEndpoint,
            region: 'us-east-1',
            credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          })
        : new EventBridgeClient({ region: values.region });
      const id = await putEvent({ eventBridge, ...(localEndpoint ? { localEndpoint } : {}) }, event);
      console.log(`event ${id} put on the default bus ${local ? `of the local stack (${localEndpoint})` : `(stack ${values.stack})`}`);
      break;
    }
    case 'metrics': {
      if (rest.length !== 0) fail(`metrics takes no arguments (--name METRIC picks one)\n${USAGE}`);
      const hours = Number(values.hours ?? 24);
      if (!(hours > 0)) fail(`--hours must be a positive number, got ${JSON.stringify(values.hours)}`);
      const summaries = local
        ? await localMetrics(await localUrl('LOCAL_METRICS_URL', 'metrics'), values.name)
        : await cloudWatchMetrics(new CloudWatchClient({ region: values.region }), values.stack!, { name: values.name, hours });
      console.log(formatMetrics(summaries));
      break;
    }
    case 'runs':
    case 'stop':
    case 'pause':
    case 'resume':
    case 'approvals': {
      // The local stack is reached as a deployed one, through the variables npm start wrote.
      const target = local ? await openLocalStack() : { stackName: values.stack!, env: {} };
      Object.assign(process.env, target.env);
      const logger = createLogger({ level: 'warn', component: 'ops', write: (line) => process.stderr.write(`${line}\n`) });
      const stack = await openStack(target.stackName, { region: values.region }, logger);
      try {
        if (command === 'approvals') {
          console.log(await approvalsCommand(stack, rest, values.reason === undefined ? {} : { reason: values.reason }));
          break;
        }
        if (command !== 'stop' && (rest.length > 0 || values.all)) fail(`${command} takes no arguments\n${USAGE}`);
        console.log(await killSwitch(stack, command as KillSwitchCommand, { threads: rest, all: values.all ?? false }));
      } finally {
        stack.destroy();
      }
      break;
    }
    default:
      fail(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
  }
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
