// Finding the command a message is, and answering it once its sender may use it: the one path the
// webhook (messages, slash commands, buttons) and admission (shared/admission/gates/commands.ts) share.
import { getActor } from '../run/actor.ts';
import { controlRefusal, isAdmin, REFUSAL_TEXTS, useRefusal, type ControlRefusal } from '../policy/access.ts';
import type { Settings } from '../settings/schema.ts';
import { withoutMention, type Answer, type Command, type CommandDeps, type CommandRequest } from './command.ts';
import * as registry from './registry.ts';

/** Every command the registry holds. */
export const COMMANDS: readonly Command[] = Object.values(registry);

export interface FoundCommand {
  command: Command;
  args: unknown;
}

/** The first of `commands` that `text` is (after any leading mention of the bot), with its arguments. */
export function commandIn(commands: readonly Command[], text: string): FoundCommand | undefined {
  const body = withoutMention(text);
  for (const command of commands) {
    const args = command.parse(body);
    if (args !== undefined) return { command, args };
  }
  return undefined;
}

/**
 * An admins' command is one only where settings.json names admins: elsewhere its words are a prompt.
 * settings.json is read for that alone.
 */
export const isOffered = async (command: Command, settings: () => Promise<Pick<Settings, 'access'>>): Promise<boolean> =>
  command.who !== 'admin' || (await settings()).access.admins.length > 0;

/** `who: 'requester'` is who may stop or steer the running run (settings.json `access.control`): refusals say so. */
const CONTROL_REFUSED: Record<ControlRefusal, string> = {
  'not-allowed': "Sorry, you're not on the list of people who may use me here, so you can't stop or steer my runs. An admin can add you.",
  'not-requester': 'Sorry, only the person who asked for this, or an admin, can stop or steer it.',
};

/**
 * Answers `command` for its sender, or tells them why they may not use it (and logs the refusal).
 * A requester's command is checked against the thread's running run, which its answer then gets;
 * with nothing running there is nobody to check against, and the command says so itself.
 */
export async function answerCommand(command: Command, request: CommandRequest<unknown>, deps: CommandDeps): Promise<Answer> {
  const log = { threadId: request.threadId, user: request.who?.userId, command: command.name };
  if (command.who === 'requester') {
    const actor = request.threadId ? await getActor(deps.control.actor, request.threadId) : undefined;
    const run = actor?.status === 'running' ? actor.current : undefined;
    if (!run) return command.answer(request, deps);
    const refusal = request.who ? controlRefusal(actor?.control, run.prompt.author.userId, request.who) : 'not-allowed';
    if (refusal) {
      deps.logger.warn(`${command.name} refused`, { ...log, runId: run.runId, workspace: request.who?.workspace, reason: refusal });
      return { text: CONTROL_REFUSED[refusal] };
    }
    return command.answer({ ...request, run }, deps);
  }
  const settings = await deps.settings();
  const { access } = settings;
  if (command.who === 'admin' && !(request.who && isAdmin(access, request.who))) {
    deps.logger.warn(`${command.name} command refused: not an admin`, log);
    return { text: command.refused ?? `Sorry, only admins can use \`${command.name}\`.` };
  }
  const refusal = command.who === 'anyone' ? useRefusal(access, request.who, request.channel) : undefined;
  if (refusal) return { text: REFUSAL_TEXTS[refusal] };
  // The answer reads the settings the check read: one read per command.
  return command.answer(request, { ...deps, settings: async () => settings });
}
