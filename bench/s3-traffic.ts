// Records the handlers' S3 calls with the bytes they move: a middleware on the S3 client the
// handlers really use (the singleton of shared/aws.ts), like bench/aws-calls.ts, but in the
// `initialize` step, above the SDK's retries: one record per `send`, which is what the sandbox step
// counts as an S3 call, with the command's input (PutObject's body) and output (GetObject's
// ContentLength, ListObjectsV2's key count) at hand.
import { clients } from '../shared/aws.ts';

export interface S3Call {
  operation: string;
  /** Key, or Prefix for a listing. */
  key: string;
  /** Date.now() when the call was sent: lines up with the execution history. */
  at: number;
  /** Object bytes received (GetObject's ContentLength). */
  bytesIn: number;
  /** Object bytes sent (PutObject's body). */
  bytesOut: number;
  /** Keys a listing returned. */
  listed: number;
  failed: boolean;
}

export interface S3Recorder {
  start(): void;
  stop(): S3Call[];
}

type Args = { input: Record<string, unknown> };
type Result = { output: Record<string, unknown> };

/** The part of the S3 client this needs (its stack is typed per command; this middleware is the same for all). */
interface InitializeHost {
  middlewareStack: {
    add(
      middleware: (next: (args: Args) => Promise<Result>, context: { commandName?: string }) => (args: Args) => Promise<Result>,
      options: { step: 'initialize'; name: string; override?: boolean },
    ): void;
  };
}

function byteLength(body: unknown): number {
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (ArrayBuffer.isView(body)) return body.byteLength;
  return 0; // streams: the handlers send none
}

export function installS3Recorder(): S3Recorder {
  let recording: S3Call[] | undefined;
  (clients.s3() as unknown as InitializeHost).middlewareStack.add(
    (next, context) => async (args) => {
      if (!recording) return next(args);
      const call: S3Call = {
        operation: (context.commandName ?? 'unknown').replace(/Command$/, ''),
        key: String(args.input.Key ?? args.input.Prefix ?? ''),
        at: Date.now(),
        bytesIn: 0,
        bytesOut: byteLength(args.input.Body),
        listed: 0,
        failed: false,
      };
      recording.push(call);
      try {
        const result = await next(args);
        if (call.operation === 'GetObject') call.bytesIn = Number(result.output.ContentLength ?? 0);
        if (call.operation === 'ListObjectsV2')
          call.listed = Number(result.output.KeyCount ?? (result.output.Contents as unknown[] | undefined)?.length ?? 0);
        return result;
      } catch (error) {
        call.failed = true;
        throw error;
      }
    },
    { step: 'initialize', name: 'benchS3Traffic', override: true },
  );
  return {
    start() {
      recording = [];
    },
    stop() {
      const calls = recording ?? [];
      recording = undefined;
      return calls;
    },
  };
}
