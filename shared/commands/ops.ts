// Admins run the kill switch from the chat: `runs` lists what runs, `stop all` stops it, `pause` and
// `resume` stop and restart new runs across the deployment. Anyone else is refused.
import { isAdmin } from '../policy/access.ts';
import { personOf } from '../admission/access-gate.ts';
import { withoutMention, type ControlDeps } from '../run/control.ts';
import { forChat } from '../support/display.ts';
import { formatRuns, listRuns, resume, stopRuns } from '../policy/kill-switch.ts';
import { pause } from '../policy/pause.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { Prompt } from '../contracts.ts';
import type { Settings } from '../settings/schema.ts';
import type { StoreDeps } from '../context/store.ts';

export type OpsCommand = 'runs' | 'stop-all' | 'pause' | 'resume';

/** `runs`, `stop all`, `pause` or `resume`, after any leading mention of the bot. */
export function parseOpsCommand(text: string): OpsCommand | undefined {
  const body = withoutMention(text).replace(/[.!]$/, '').trim().toLowerCase();
  if (body === 'runs' || body === 'pause' || body === 'resume') return body;
  return /^stop\s+all$/.test(body) ? 'stop-all' : undefined;
}

export interface OpsCommandDeps {
  control: ControlDeps;
  store: StoreDeps;
  /** Tells the prompt's author (ephemerally where the platform can). */
  reply(prompt: Prompt, text: string): Promise<void>;
  logger: JsonLogger;
}

export async function answerOpsCommand(deps: OpsCommandDeps, settings: Settings, prompt: Prompt, command: OpsCommand): Promise<void> {
  const who = personOf(prompt);
  const log = { threadId: prompt.threadId, user: prompt.author.userId, command };
  if (!who || !isAdmin(settings.access, who)) {
    deps.logger.warn('ops command refused: not an admin', log);
    await deps.reply(prompt, 'Sorry, only admins can list, stop, pause or resume runs from the chat.');
    return;
  }
  const admin = `${who.adapter}:${who.userId}`;
  const actor = deps.control.actor;
  let answer: string;
  if (command === 'runs') {
    answer = `\`\`\`\n${formatRuns(await listRuns({ actor, store: deps.store }), forChat)}\n\`\`\``;
  } else if (command === 'stop-all') {
    const stopped = await stopRuns(deps.control, 'all', `an admin, ${admin}`);
    answer = `Stopped ${stopped.length} run${stopped.length === 1 ? '' : 's'}.`;
  } else if (command === 'pause') {
    await pause(actor, admin);
    answer =
      'Paused: no new run starts until an admin says `resume` (running runs go on; `stop all` stops them). Prompts wait in their threads.';
  } else {
    const started = await resume(actor);
    answer = `Resumed: new runs start again${started.length ? `, and the prompts that waited in ${started.length} thread${started.length === 1 ? '' : 's'} are starting` : ''}.`;
  }
  deps.logger.info('ops command', { ...log, answer });
  await deps.reply(prompt, answer);
}
