// One run through the local cloud with a scripted model: post a mention, wait for the run's
// execution to end, and collect what the model was sent back (tool results by tool-use id).
import type { RecordedRequest, ScriptedTurn } from '../../packages/local-cloud/src/bedrock.ts';
import { DEFAULT_CHANNEL } from '../../packages/local-cloud/src/slack/index.ts';
import { eventually } from './eventually.ts';
import type { TestStack } from './local-stack.ts';

export async function runScripted(
  stack: TestStack,
  options: { text: string; turns: ScriptedTurn[]; channel?: string; timeoutMs?: number },
) {
  const channel = options.channel ?? DEFAULT_CHANNEL;
  // The turns go to this channel's runs only: a run another test left behind (a periodic event file
  // firing every minute) must not take one and run its tool call in another thread's sandbox.
  const inChannel = (request: RecordedRequest) => JSON.stringify(request.body.system ?? '').includes(`slack:${channel}:`);
  stack.bedrock.script(...options.turns.map((turn) => ({ takenBy: inChannel, ...turn })));
  const firstRequest = stack.bedrock.requests.length;
  const posted = await stack.slack.postUserMessage({ channel, text: `<@U0LOCALBOT> ${options.text}` });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const execution = await eventually(
    () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId),
    // The first run of a fresh stack on a loaded machine takes a while to be dispatched.
    60_000,
    'run started',
  );
  const ended = await stack.cloud.stepFunctions.waitForExecution(execution.executionArn, options.timeoutMs ?? 60_000);
  const requests = stack.bedrock.requests.slice(firstRequest);
  const results = requests.flatMap((r) =>
    (r.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult ? [b.toolResult] : []))),
  );
  const byId = new Map(results.map((r) => [r.toolUseId!, { status: r.status, text: (r.content ?? []).map((c) => c.text ?? '').join('') }]));
  return { posted, threadId, ended, requests, results: byId };
}

let toolTurns = 0;
/** A model turn that makes one tool call, with an id unique in the test process. */
export const toolTurn = (name: string, input: Record<string, unknown>): ScriptedTurn => ({
  toolUses: [{ toolUseId: `tu-${name}-${++toolTurns}`, name, input }],
});
export const toolUseIdOf = (turn: ScriptedTurn): string => turn.toolUses![0]!.toolUseId!;
