// A prompt that is a command answered at dispatch (shared/commands/registry.ts) is answered here,
// in its thread's order and after the access check, and never reaches a run or the model.
import { answerCommand, commandIn, isOffered } from '../../commands/answer.ts';
import { end, next, type Gate } from '../context.ts';

export const answerCommands: Gate = async ({ prompt, person, channel, settings, thread }, deps) => {
  const found = commandIn(deps.commands, prompt.text);
  const current = async () => settings;
  if (!found || found.command.runsAt !== 'dispatch' || !(await isOffered(found.command, current))) return next();
  const request = { args: found.args, who: person, name: prompt.author.userName, channel, threadId: prompt.threadId, prompt };
  const answer = await answerCommand(found.command, request, { ...deps.commandDeps, settings: current });
  await (answer.toThread ? thread.post(answer.text) : thread.tell(answer.text));
  return end('answered');
};
