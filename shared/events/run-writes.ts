// How many event files one run has saved from its sandbox (maxEventFilesPerRun): one counter item
// per run, taken one save at a time on condition that saves are left, so the sixteen uploads of one
// sync racing each other cannot pass the limit together. A run handed over to a new execution keeps
// its id, so its count.
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { takeSlot } from '../run/capacity.ts';
import { eventFilesSavedKey } from '../table.ts';

/** A run lasts at most a day (maxRunMinutes); its count is kept a little longer. */
const KEEP_SECONDS = 2 * 86_400;

/** Takes one of the run's `max` event file saves: false once they are all taken. */
export async function takeEventFileSave(
  deps: { db: DynamoDBDocumentClient; tableName: string },
  runId: string,
  max: number,
  nowMs: number,
): Promise<boolean> {
  if (max <= 0) return false;
  try {
    await deps.db.send(
      new UpdateCommand(takeSlot(deps.tableName, eventFilesSavedKey(runId), max, Math.ceil(nowMs / 1000) + KEEP_SECONDS).Update),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** Why a run whose limit is 0 saves no event file: a subagent's never may (shared/run/subagents/). */
export const NO_EVENT_FILES_WHY =
  "a subagent's run starts no events; any other run may save none when maxEventFilesPerRun is 0 in settings.json";

/** Why an event file past the run's limit was not saved (its error file, and the model's tool result). */
export const eventFileSaveRefusal = (key: string, max: number): string =>
  max === 0
    ? `${key}: not saved: ${NO_EVENT_FILES_WHY}. Nothing runs from it`
    : `${key}: not saved: this run already saved ${max} event file${max === 1 ? '' : 's'}, the most one run may ` +
      `(maxEventFilesPerRun in settings.json), so one request cannot start many threads. Nothing runs from it; ` +
      'if more are really needed, ask the person, whose next message starts a run that may save more';
