// The ToolProgress step, in agent-step: a command still running in the sandbox printed a new last
// line (the sandbox step, which cannot reach the chat, sent it here); the thread's status shows it
// and the run goes back to the sandbox step, which attaches to the same command. After a stop the
// line is not shown: the sandbox step cancels the command and ends the run.
import type { LoopState, RunInput } from '../../contracts.ts';
import type { AgentDeps } from './deps.ts';
import { isStopped } from './run-control.ts';
import { loadSnapshot } from './snapshot.ts';
import { showChildProgress } from '../subagents/progress.ts';

/** The status line while a tool runs: the agent's name when the run works as one, and a running command's last line. */
export function toolStatus(tool: string, agent?: string, line?: string): string {
  return `${agent ? `${agent}: ` : ''}Running ${tool}…${line ? ` ${line}` : ''}`;
}

/**
 * The longest the status update holds the run up: the command has no sandbox step waiting on it
 * meanwhile (the command server cancels it after DETACH_MS), and a rate-limited chat API retries for minutes.
 */
const STATUS_WAIT_MS = 3_000;

export async function progressStep(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const { progress } = loop;
  const back: LoopState = { step: loop.step, next: 'sandbox', ...(progress ? { progress } : {}) };
  if (!progress || (await isStopped(deps, run))) return back;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, STATUS_WAIT_MS)));
  await Promise.race([show(deps, run, progress), late]);
  clearTimeout(timer);
  return back;
}

async function show(deps: AgentDeps, run: RunInput, progress: NonNullable<LoopState['progress']>): Promise<void> {
  // A subagent's line is its part of the one status line its parent's children share.
  if (run.child) return showChildProgress(deps, run, `running ${progress.tool}… ${progress.line}`.trim());
  // The snapshot is in the container already (runStep read it for the run's secret patterns).
  const agent = run.agent ? (await loadSnapshot(deps, run)).agent : undefined;
  await deps
    .thread(run)
    .startTyping(toolStatus(progress.tool, agent, progress.line))
    .catch((error: unknown) => deps.logger.warn('could not show the tool status', { error }));
}
