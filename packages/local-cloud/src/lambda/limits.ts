// Lambda's payload limits, in bytes of the JSON (UTF-8), as AWS counts them.
export const SYNC_REQUEST_LIMIT = 6 * 1024 * 1024;
export const SYNC_RESPONSE_LIMIT = 6 * 1024 * 1024;
export const ASYNC_PAYLOAD_LIMIT = 256 * 1024;

/** An invocation AWS would refuse, with the error name Lambda uses for it. */
export class LambdaLimitExceeded extends Error {
  constructor(name: 'RequestTooLargeException' | 'Function.ResponseSizeTooLarge', message: string) {
    super(message);
    this.name = name;
  }
}
