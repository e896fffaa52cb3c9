// `npm start`: the local stack (start.ts). This file answers --help and reads .env before it loads
// the local cloud's code, which takes seconds on a busy machine, and says so first.
import { loadDotEnv, parseCommandLine } from '../../../shared/support/cli-args.ts';

const USAGE = `usage: npm start
Runs the stack on this machine (the local cloud) until Ctrl-C. Settings are environment variables,
also read from .env in the checkout (see .env.example and docs/local.md, "Local configuration"):
  PORT (3000), LOCAL_SLACK_PORT (3001), LOCAL_EVENTBRIDGE_PORT (3002), LOCAL_TEAMS_PORT (3003),
  LOCAL_METRICS_PORT (3004)   where it listens; 0 takes any free port
  LOCAL_MODEL                 demo (the default without AWS credentials), echo, or bedrock
  LOCAL_SANDBOX               isolated (default), egress or unsafe
  LOCAL_STACK_FILE            where the CLIs find this stack (default .local/stack.json)`;

parseCommandLine('start', USAGE, { options: {} });
loadDotEnv();
const started = Date.now();
console.log('Starting the local stack; each step as it finishes (seconds since the start, and its own):');
const { runLocalStack } = await import('./start.ts');
await runLocalStack(started);
