// `stop` (or `/stop`, the /stop slash command, the Stop button): ends the thread's running run now.
import { stopThread, STOP_ACTION } from '../run/control.ts';
import { defineCommand } from './command.ts';

const NOTHING_TO_STOP = 'Nothing is running in this thread.';

export const stopCommand = defineCommand({
  name: 'stop',
  parse: (text) => (/^\/?stop[.!]?$/i.test(text) ? {} : undefined),
  runsAt: 'webhook',
  who: 'requester',
  slash: { command: '/stop' },
  button: { actionId: STOP_ACTION, text: 'stop' },
  async answer({ threadId, run }, deps) {
    if (!threadId || !run) return { text: NOTHING_TO_STOP };
    // Only the run its sender was checked against: a newer one is not theirs to stop.
    const outcome = await stopThread(deps.control, threadId, undefined, run.runId);
    return outcome === 'stopped' ? { text: 'Stopped.', toThread: true } : { text: NOTHING_TO_STOP };
  },
});
