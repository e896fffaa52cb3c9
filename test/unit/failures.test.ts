import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeFailure } from '../../shared/failures.ts';
import { WorkspaceSyncError } from '../../shared/sandbox/sync-notes.ts';

test("a failed sync is named as one, never as the model's rejection", () => {
  const cause = Object.assign(new Error('Item size has exceeded the maximum allowed size'), { name: 'ValidationException' });
  const error = new WorkspaceSyncError(cause);
  const text = describeFailure({ errorType: error.name, errorMessage: error.message }, 'some-model');
  assert.match(
    text,
    /^Saving the files of this thread's sandbox failed: syncing the sandbox's files with S3 failed \(ValidationException: Item size/,
  );
  assert.doesNotMatch(text, /model/);
  assert.match(describeFailure({ errorType: 'ValidationException', errorMessage: 'bad input' }, 'm'), /The model rejected the request/);
});
