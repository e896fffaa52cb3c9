// What PostToolUse hooks make of a call's result: a block withholds it, a result replaces it, a
// context is added under it. One rule for the tool step (agent tools) and the sandbox step.
import type { ToolOutcome } from '../tools/tool.ts';
import { hookContextText, type HookVerdict } from './run.ts';

export function hookedResult(verdict: HookVerdict, outcome: ToolOutcome): ToolOutcome {
  if (verdict.blocked !== undefined)
    return { status: 'error', text: `The result was withheld: a PostToolUse hook blocked it. Reason: ${verdict.blocked}` };
  const text = verdict.result ?? outcome.text;
  return { ...outcome, text: verdict.context ? `${text}\n\n${hookContextText('PostToolUse', verdict.context)}` : text };
}
