// The functions' S3 calls with the bytes they move, from the local cloud's record of AWS calls
// (bench/aws-calls.ts): the object key or listing prefix from the request line, bytes out from the
// request body (PutObject), bytes in from the response body (GetObject). One record per HTTP
// attempt; the handlers' S3 calls are retried only on throttling, which the local cloud never does.
import type { TestStack } from '../test/support/local-stack.ts';
import { awsCallRecorder, type AwsCall } from './aws-calls.ts';

export interface S3Call {
  operation: string;
  /** Key, or Prefix for a listing. */
  key: string;
  /** Date.now() when the call ended: lines up with the execution history. */
  at: number;
  /** Object bytes received (GetObject's body). */
  bytesIn: number;
  /** Object bytes sent (PutObject's body). */
  bytesOut: number;
  /** Bytes of the listings' responses (ListObjectsV2's XML: grows with the keys listed). */
  listBytes: number;
  failed: boolean;
}

export interface S3Recorder {
  start(): void;
  stop(): S3Call[];
}

function s3CallOf(call: AwsCall): S3Call {
  const url = new URL(call.path, 'http://s3.local');
  // Path-style requests (the local cloud's S3): /bucket/key.
  const key = decodeURIComponent(url.pathname.split('/').slice(2).join('/'));
  const listing = call.operation.startsWith('ListObjects');
  const ok = call.status < 400;
  return {
    operation: call.operation,
    key: listing ? (url.searchParams.get('prefix') ?? '') : key,
    at: call.at,
    bytesIn: ok && call.operation === 'GetObject' ? call.responseBytes : 0,
    bytesOut: call.operation === 'PutObject' ? call.requestBytes : 0,
    listBytes: ok && listing ? call.responseBytes : 0,
    failed: !ok,
  };
}

export function installS3Recorder(stack: TestStack): S3Recorder {
  const recorder = awsCallRecorder(stack);
  return {
    start: () => recorder.start(),
    stop: () =>
      recorder
        .stop()
        .filter((c) => c.service === 'S3' && c.source === 'handlers')
        .map(s3CallOf),
  };
}
