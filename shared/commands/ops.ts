// Admins run the kill switch from the chat: `runs` lists what runs, `stop all` stops it, `pause` and
// `resume` stop and restart new runs across the deployment. Anyone else is refused.
import { forChat } from '../support/display.ts';
import { formatRuns, listRuns, resume, stopRuns } from '../policy/kill-switch.ts';
import { pause } from '../policy/pause.ts';
import { defineCommand, storeOf } from './command.ts';

type OpsArgs = 'runs' | 'stop-all' | 'pause' | 'resume';

/** `runs`, `stop all`, `pause` or `resume`. */
function parseOps(text: string): OpsArgs | undefined {
  const body = text.replace(/[.!]$/, '').trim().toLowerCase();
  if (body === 'runs' || body === 'pause' || body === 'resume') return body;
  return /^stop\s+all$/.test(body) ? 'stop-all' : undefined;
}

export const opsCommand = defineCommand({
  name: 'ops',
  parse: parseOps,
  runsAt: 'dispatch',
  who: 'admin',
  refused: 'Sorry, only admins can list, stop, pause or resume runs from the chat.',
  async answer({ args, who, threadId }, deps) {
    // answerCommand let only an admin through: a person.
    const admin = `${who!.adapter}:${who!.userId}`;
    const actor = deps.control.actor;
    let answer: string;
    if (args === 'runs') {
      answer = `\`\`\`\n${formatRuns(await listRuns({ actor, store: storeOf(deps) }), forChat)}\n\`\`\``;
    } else if (args === 'stop-all') {
      const stopped = await stopRuns(deps.control, 'all', `an admin, ${admin}`);
      answer = `Stopped ${stopped.length} run${stopped.length === 1 ? '' : 's'}.`;
    } else if (args === 'pause') {
      await pause(actor, admin);
      answer =
        'Paused: no new run starts until an admin says `resume` (running runs go on; `stop all` stops them). Prompts wait in their threads.';
    } else {
      const started = await resume(actor);
      answer = `Resumed: new runs start again${started.length ? `, and the prompts that waited in ${started.length} thread${started.length === 1 ? '' : 's'} are starting` : ''}.`;
    }
    deps.logger.info('ops command', { threadId, user: who?.userId, command: args, answer });
    return { text: answer };
  },
});
