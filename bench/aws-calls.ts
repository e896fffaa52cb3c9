// Reads the AWS API calls of a stretch of the bench from the local cloud's own record: every call a
// function makes goes through the front door of its service, which records the calling role, the
// operation, the request line, the status and the bytes each way (one record per HTTP attempt, so
// an SDK retry counts twice, as AWS bills and throttles it). The functions run in worker threads,
// so this is the only place that sees their calls. Calls signed by the operator through a front
// door are the bench's own (its inbox checks) and are left out.
//
// The SQS event source mapping (AWS's calls, not the code's) polls with the local cloud's operator
// client, in this process, straight to the emulator: a middleware on that client records them.
//
// Model calls do not go through a front door (the Bedrock fake is the endpoint): they come from the
// fake's own record of the requests it received.
import type { FunctionRole } from '../infra/function-entries.ts';
import type { AwsCall as RecordedCall } from '../packages/local-cloud/src/front-door/index.ts';
import type { TestStack } from '../test/support/local-stack.ts';

export type Phase = 'webhook' | 'dispatch' | 'prepare' | 'model' | 'finish';
export const PHASES: Phase[] = ['webhook', 'dispatch', 'prepare', 'model', 'finish'];

/** A call as the front door recorded it, named for reading (service, S3 operation) and placed (function, source). */
export interface AwsCall extends Pick<RecordedCall, 'method' | 'path' | 'requestBytes' | 'responseBytes' | 'at'> {
  service: string;
  operation: string;
  /** 'handlers': the functions' own calls; 'platform': the local cloud's (SQS event source mapping). */
  source: 'handlers' | 'platform';
  /** The function that made the call, from the role it signed with (undefined for the platform and for model calls). */
  fn?: FunctionRole;
  /** HTTP status; 0 for model calls (the Bedrock fake does not record its answers). */
  status: number;
  /** Front door: request arrival → response sent, and of it the wait on the emulator; unknown for model and platform calls. */
  durationMs?: number;
  upstreamMs?: number;
}

const SERVICE_NAMES: Record<string, string> = {
  dynamodb: 'DynamoDB',
  s3: 'S3',
  sqs: 'SQS',
  states: 'Step Functions',
  ecs: 'ECS',
  scheduler: 'Scheduler',
  events: 'EventBridge',
};

/**
 * The SDK's name of an S3 operation: the front door names a call by the IAM action it needs, and
 * S3's actions differ from its operations (ListObjectsV2 needs s3:ListBucket, HeadObject s3:GetObject).
 */
function s3Operation(method: string, path: string, action: string): string {
  if (method === 'HEAD') return path.split('?')[0]!.split('/').length > 2 ? 'HeadObject' : 'HeadBucket';
  if (action === 'ListBucket') return /[?&]list-type=2/.test(path) ? 'ListObjectsV2' : 'ListObjects';
  return action;
}

/** The part of an SDK client this needs; every v3 client has it (typed per client and operation). */
interface MiddlewareHost {
  middlewareStack: {
    add(
      middleware: (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => Promise<unknown>,
      options: { step: 'deserialize'; name: string; override?: boolean },
    ): void;
  };
}

const platformLogs = new WeakMap<TestStack, AwsCall[]>();

/** Every call of the event source mapping's SQS client since the first recorder of this stack. */
function platformLog(stack: TestStack): AwsCall[] {
  let log = platformLogs.get(stack);
  if (log) return log;
  log = [];
  const calls = log;
  (stack.cloud.clients.sqs as unknown as MiddlewareHost).middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const operation = (context.commandName ?? 'unknown').replace(/Command$/, '');
      calls.push({
        service: 'SQS',
        operation,
        source: 'platform',
        method: 'POST',
        path: '/',
        status: 200,
        requestBytes: 0,
        responseBytes: 0,
        at: Date.now(),
      });
      return result;
    },
    // Below the SDK's retries: every HTTP attempt, as the front doors count them.
    { step: 'deserialize', name: 'benchPlatformCalls', override: true },
  );
  platformLogs.set(stack, log);
  return log;
}

export interface AwsCallRecorder {
  /** Start a stretch: calls recorded from now on are the stretch's. */
  start(): void;
  /** The calls of the stretch since start(), in the order they ended. */
  stop(): AwsCall[];
}

export function awsCallRecorder(stack: TestStack): AwsCallRecorder {
  const functionOf = new Map(Object.entries(stack.cloud.functionRoles).map(([fn, role]) => [role, fn as FunctionRole]));
  const platform = platformLog(stack);
  let from: { aws: number; bedrock: number; platform: number } | undefined;
  return {
    start() {
      from = { aws: stack.cloud.awsCalls.length, bedrock: stack.bedrock.requests.length, platform: platform.length };
    },
    stop() {
      if (!from) return [];
      const aws = stack.cloud.awsCalls
        .slice(from.aws)
        .filter((c) => c.caller !== 'operator')
        .map((c): AwsCall => ({
          service: SERVICE_NAMES[c.service] ?? c.service,
          operation: c.service === 's3' ? s3Operation(c.method, c.path, c.operation) : c.operation,
          source: 'handlers',
          fn: functionOf.get(c.caller),
          method: c.method,
          path: c.path,
          status: c.status,
          requestBytes: c.requestBytes,
          responseBytes: c.responseBytes,
          at: c.at,
          durationMs: c.durationMs,
          upstreamMs: c.upstreamMs,
        }));
      const model = stack.bedrock.requests.slice(from.bedrock).map((r): AwsCall => ({
        service: 'Bedrock Runtime',
        operation: r.operation === 'converse-stream' ? 'ConverseStream' : 'Converse',
        source: 'handlers',
        method: 'POST',
        path: r.path,
        status: 0,
        requestBytes: 0,
        responseBytes: 0,
        at: r.time,
      }));
      const polls = platform.slice(from.platform);
      from = undefined;
      return [...aws, ...model, ...polls].sort((a, b) => a.at - b.at);
    },
  };
}

/** When a call reached its front door (the record's `at` is when its answer was sent). */
export const arrival = (c: AwsCall) => c.at - (c.durationMs ?? 0);

/** A write of a thread's log.jsonl (the exchange log), which only a run's finish makes. */
export const isLogWrite = (call: AwsCall): boolean => call.operation === 'PutObject' && call.path.split('?')[0]!.endsWith('/log.jsonl');

/**
 * The sandbox item's write after each RunTask of agent-step: prepare's early start of the sandbox
 * goes on beside the first model step, so its second call can arrive in the model step's time. It
 * is the first DynamoDB call of agent-step to arrive once RunTask has answered (sent at once then).
 */
export function sandboxStartWrites(calls: AwsCall[]): Set<AwsCall> {
  const ofAgentStep = calls.filter((c) => c.fn === 'agentStep').sort((a, b) => arrival(a) - arrival(b));
  const writes = new Set<AwsCall>();
  for (const runTask of ofAgentStep.filter((c) => c.operation === 'RunTask')) {
    const write = ofAgentStep.find((c) => c.service === 'DynamoDB' && arrival(c) >= runTask.at);
    if (write) writes.add(write);
  }
  return writes;
}
