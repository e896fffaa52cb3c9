// The callback pattern (`.waitForTaskToken`): each Task state entry gets a fresh `$$.Task.Token`;
// a state that waits registers its token here, and SendTaskSuccess / SendTaskFailure end the wait.
// A token that was never waited on is unknown (TaskDoesNotExist); one whose task has ended (it
// timed out, its execution stopped, it already got an answer) is TaskTimedOut, as in AWS.
import { randomBytes } from 'node:crypto';
import { ApiError } from '../aws-protocol.ts';
import type { RunOptions } from 'aws-local-stepfunctions';

type TaskHandler = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>[string];
/** A value of the state machine's data, as the runner's task handlers take it. */
export type JsonValue = Parameters<TaskHandler>[0];

// AWS's tokens are opaque strings of up to 1,024 characters; ours carry 48 random bytes.
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{64}$/;
const MAX_TOKEN_CHARS = 1024;

/** An answer given to a waiting task: its output, or the error and cause it fails with. */
export type TaskAnswer = { output: JsonValue } | { error: string; cause: string };

interface Waiting {
  executionArn: string;
  answer(answer: TaskAnswer): void;
}

export function newTaskToken(): string {
  return randomBytes(48).toString('base64url');
}

export function createTaskTokens() {
  const waiting = new Map<string, Waiting>();
  const ended = new Set<string>();

  /** Waits for the token's answer; ends the wait (the token then times out) when `signal` aborts. */
  function wait(token: string, executionArn: string, signal: AbortSignal): Promise<TaskAnswer> {
    const { promise, resolve } = Promise.withResolvers<TaskAnswer>();
    const close = () => {
      waiting.delete(token);
      ended.add(token);
    };
    const onAbort = () => {
      close();
      resolve({ error: 'States.Runtime', cause: 'The task has ended' });
    };
    waiting.set(token, {
      executionArn,
      answer(answer) {
        signal.removeEventListener('abort', onAbort);
        close();
        resolve(answer);
      },
    });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    return promise;
  }

  /** What SendTaskSuccess and SendTaskFailure do with a token. */
  function answer(token: unknown, taskAnswer: TaskAnswer): void {
    if (typeof token !== 'string' || token.length < 1 || token.length > MAX_TOKEN_CHARS) {
      throw new ApiError('ValidationException', `1 validation error detected: Value at 'taskToken' failed to satisfy constraint`);
    }
    if (!TOKEN_PATTERN.test(token)) throw new ApiError('InvalidToken', 'Invalid Token');
    const found = waiting.get(token);
    if (found) return found.answer(taskAnswer);
    if (ended.has(token)) throw new ApiError('TaskTimedOut', 'Task Timed Out');
    throw new ApiError('TaskDoesNotExist', 'Task Does Not Exist');
  }

  return { wait, answer, waitingCount: () => waiting.size };
}

export type TaskTokens = ReturnType<typeof createTaskTokens>;
