// A subagent is a child run: its own execution of the agent-run state machine, started by a parent
// run's `subagent` tool call. It works in the thread's sandbox on a context of its own, under the run
// that holds the thread (the root): the root's stop flag stops it, the root's lease is its lease.
import { sha256Hex } from '../../ids.ts';
import type { ChildRun, RunInput } from '../../contracts.ts';
import type { ContextEntry } from '../../context/store.ts';

/** The run whose lease and stop flag a run obeys: the root of a subagent tree, or the run itself. */
export const holderRunId = (run: Pick<RunInput, 'runId' | 'child'>): string => run.child?.rootRunId ?? run.runId;

/** How deep the run is: 0 for a run a prompt started, 1 for its subagents, ... */
export const depthOf = (run: Pick<RunInput, 'child'>): number => run.child?.depth ?? 0;

/** A child's run id (and execution name): the same for the same call, so a retried start starts nothing new. */
export const childRunId = (parentRunId: string, toolUseId: string): string => `sub-${sha256Hex(parentRunId, toolUseId).slice(0, 40)}`;

export interface ChildRequest {
  toolUseId: string;
  task: string;
  context?: string;
  /** The agent definition the child works as (absent: the parent's). */
  agent?: string;
}

/**
 * The child's run input. It carries the parent's prompt for who asked and where (budgets, access,
 * the thread), without its text: the task is the child's prompt.
 */
export function childRunInput(
  parent: RunInput,
  request: ChildRequest,
  wait: { batch: string; deadline: number; maxModelSteps: number },
): RunInput {
  const { text: _text, textKey: _textKey, files: _files, ...prompt } = parent.prompt;
  const child: ChildRun = {
    parentRunId: parent.runId,
    rootRunId: holderRunId(parent),
    toolUseId: request.toolUseId,
    batch: wait.batch,
    depth: depthOf(parent) + 1,
    task: request.task,
    ...(request.context ? { context: request.context } : {}),
    deadline: wait.deadline,
    maxModelSteps: wait.maxModelSteps,
  };
  const agent = request.agent ?? parent.agent;
  return {
    runId: childRunId(parent.runId, request.toolUseId),
    threadId: parent.threadId,
    prompt: { ...prompt, text: '' },
    ...(agent ? { agent } : {}),
    child,
  };
}

/** The first entry of a subagent's own context: its task, and the context its parent gave with it. */
export function childTaskEntry(run: RunInput, child: ChildRun, now: number): ContextEntry {
  const text = child.context ? `${child.task}\n\n## Context from the agent that asked\n${child.context}` : child.task;
  return {
    role: 'user',
    content: [{ text }],
    meta: { runId: run.runId, messageId: run.prompt.messageId, at: new Date(now).toISOString() },
  };
}
