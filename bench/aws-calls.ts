// Counts AWS API calls at the SDK: a middleware on the clients the handlers really use (the
// singletons of shared/aws.ts, which the local cloud's handler modules share with this process)
// and on the local cloud's own SQS client (the event source mapping's polling: AWS's calls, not
// the code's). It sits in the `deserialize` step, below the SDK's retry middleware, so it sees
// every HTTP attempt, i.e. what AWS would bill and throttle.
//
// Which function made a call is read from the call's async stack trace (V8 keeps the awaiting
// callers), e.g. `modelStep (shared/steps/model.ts)` or `handler (functions/ingress/dispatch.ts)`. Calls
// the trace cannot place (a Chat SDK write not awaited by the handler) are placed by time later.
import { clients } from '../shared/aws.ts';
import type { TestStack } from '../test/support/local-stack.ts';

export type Phase = 'webhook' | 'dispatch' | 'prepare' | 'model' | 'finish';
export const PHASES: Phase[] = ['webhook', 'dispatch', 'prepare', 'model', 'finish'];

export interface AwsCall {
  service: string;
  operation: string;
  /** 'handlers': the functions' own calls; 'platform': the local cloud's (SQS event source mapping). */
  source: 'handlers' | 'platform';
  at: number;
  /** From the stack trace, when it names the function. */
  phase?: Phase;
}

const SERVICE_NAMES: Record<string, string> = {
  DynamoDBClient: 'DynamoDB',
  SFNClient: 'Step Functions',
  BedrockRuntimeClient: 'Bedrock Runtime',
  SecretsManagerClient: 'Secrets Manager',
};

/** 'S3Client' → 'S3', with readable names where the client's differs from the service's. */
const serviceName = (clientName: string) => SERVICE_NAMES[clientName] ?? clientName.replace(/Client$/, '');

// Most specific first: an agent step's trace also passes through shared code used by others.
const PHASE_FRAMES: [Phase, RegExp][] = [
  ['model', /\bmodelStep \([^)]*shared[\\/]agent\.ts/],
  ['prepare', /\bprepare \([^)]*shared[\\/]agent\.ts/],
  ['finish', /\b(finish|fail) \([^)]*shared[\\/]agent\.ts/],
  ['dispatch', /functions[\\/]ingress[\\/]dispatch\.ts/],
  ['webhook', /functions[\\/]ingress[\\/]webhook\.ts|shared[\\/]ingress\.ts/],
];

function phaseFromStack(stack: string): Phase | undefined {
  return PHASE_FRAMES.find(([, pattern]) => pattern.test(stack))?.[0];
}

/** The part of an SDK client this needs; every v3 client has it (typed per client and operation). */
interface MiddlewareHost {
  middlewareStack: {
    add(
      middleware: (
        next: (args: unknown) => Promise<unknown>,
        context: { clientName?: string; commandName?: string },
      ) => (args: unknown) => Promise<unknown>,
      options: { step: 'deserialize'; name: string; override?: boolean },
    ): void;
  };
}

export interface AwsCallCounter {
  /** Start recording; with `traces`, also read each call's stack to tell which function made it. */
  start(options?: { traces?: boolean }): void;
  stop(): AwsCall[];
}

export function installAwsCallCounter(stack: TestStack): AwsCallCounter {
  let recording: AwsCall[] | undefined;
  let traces = false;
  // Each client's stack is typed with its own inputs and outputs; this middleware is the same for all.
  const instrument = (client: { middlewareStack: unknown }, source: AwsCall['source']) =>
    (client as MiddlewareHost).middlewareStack.add(
      (next, context) => async (args) => {
        if (recording) {
          recording.push({
            service: serviceName(context.clientName ?? 'unknown'),
            operation: (context.commandName ?? 'unknown').replace(/Command$/, ''),
            source,
            at: Date.now(),
            phase: traces ? phaseFromStack(new Error().stack ?? '') : undefined,
          });
        }
        return next(args);
      },
      { step: 'deserialize', name: 'benchCallCounter', override: true },
    );
  // Called after the local cloud has loaded the handlers and set the endpoints, so these are the
  // very clients the handlers use; any the handlers never ask for (Secrets Manager locally: no
  // secret ARN) is created here but stays unused.
  for (const client of Object.values(clients)) instrument(client(), 'handlers');
  instrument(stack.cloud.clients.sqs, 'platform');

  let savedLimit = Error.stackTraceLimit;
  return {
    start(options = {}) {
      traces = options.traces ?? false;
      savedLimit = Error.stackTraceLimit;
      // The handler frames sit below the SDK's own dozen middleware frames.
      if (traces) Error.stackTraceLimit = 60;
      recording = [];
    },
    stop() {
      const calls = recording ?? [];
      recording = undefined;
      Error.stackTraceLimit = savedLimit;
      return calls;
    },
  };
}
