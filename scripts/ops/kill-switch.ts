// `runs`, `stop`, `pause`, `resume`: what each prints, given the stack (scripts/ops/stack.ts).
import { forTerminal } from '../../shared/support/display.ts';
import { formatRuns, listRuns, resume, stopRuns } from '../../shared/policy/kill-switch.ts';
import { pause, pauseState } from '../../shared/policy/pause.ts';
import type { OpsStack } from './stack.ts';

/** Who the threads and the logs say stopped or paused runs from the ops CLI. */
export const OPERATOR = 'an operator';

export type KillSwitchCommand = 'runs' | 'stop' | 'pause' | 'resume';

export async function killSwitch(stack: OpsStack, command: KillSwitchCommand, args: { threads: string[]; all: boolean }): Promise<string> {
  const actor = stack.control.actor;
  switch (command) {
    case 'runs': {
      const state = await pauseState(actor);
      const runs = formatRuns(await listRuns({ actor, store: stack.store }), forTerminal);
      return state.paused ? `${runs}\n\nPaused by ${forTerminal(state.by ?? '?')} since ${new Date(state.at!).toISOString()}.` : runs;
    }
    case 'stop': {
      if (args.all === args.threads.length > 0) throw new Error('stop takes thread ids, or --all');
      const stopped = await stopRuns(stack.control, args.all ? 'all' : args.threads, OPERATOR);
      const idle = args.threads.filter((t) => !stopped.includes(t));
      return [
        `Stopped ${stopped.length} run${stopped.length === 1 ? '' : 's'}${stopped.length ? `: ${stopped.map(forTerminal).join(', ')}` : ''}.`,
        ...idle.map((t) => `Nothing is running in ${forTerminal(t)}.`),
      ].join('\n');
    }
    case 'pause':
      await pause(actor, OPERATOR);
      return `Paused ${stack.stackName}: no new run starts until \`npm run ops -- resume\`; prompts wait in their threads. Running runs go on (stop them with \`npm run ops -- stop --all\`).`;
    case 'resume': {
      const started = await resume(actor);
      return `Resumed ${stack.stackName}: new runs start again${started.length ? `; started the waiting prompts of ${started.map(forTerminal).join(', ')}` : ''}.`;
    }
  }
}
