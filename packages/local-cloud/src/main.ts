// `npm start`: the local stack (start.ts). This file answers --help and reads .env before it loads
// the local cloud's code, which takes seconds on a busy machine, and says so first.
import { loadDotEnv, parseCommandLine } from '../../../shared/support/cli-args.ts';

const USAGE = `usage: npm start [-- --persist]
Runs the stack on this machine (the local cloud) until Ctrl-C. Its state is in memory, gone when it
stops; with --persist the state table (DynamoDB Local) is kept in .local/ beside the stack file and
found again at the next start with --persist (the bucket, the queues, the schedules and the Slack
and Teams stand-ins' conversations stay in memory). Settings are environment variables,
also read from .env in the checkout (see .env.example and docs/local.md, "Local configuration"):
  PORT (3000), LOCAL_SLACK_PORT (3001), LOCAL_EVENTBRIDGE_PORT (3002), LOCAL_TEAMS_PORT (3003),
  LOCAL_METRICS_PORT (3004), LOCAL_CONSOLE_PORT (3005)   where it listens; 0 takes any free port
  LOCAL_MODEL                 demo (the default without AWS credentials), echo, or bedrock
  LOCAL_SANDBOX               isolated (default), egress or unsafe
  LOCAL_STACK_FILE            where the CLIs find this stack (default .local/stack.json)`;

const { values } = parseCommandLine('start', USAGE, { options: { persist: { type: 'boolean', default: false } } });
loadDotEnv();
const started = Date.now();
console.log('Starting the local stack; each step as it finishes (seconds since the start, and its own):');
const { runLocalStack } = await import('./start.ts');
await runLocalStack(started, { persist: values.persist });
