// An admin who writes to the agent while settings.json is invalid is told what is wrong with it, in
// the functions' own words, only to them (ephemerally where the platform can), once per version of
// the file: a conditional write in the chat state remembers who was told of which version. Nobody
// else hears of it; the log has every problem (settings/source.ts).
import { isAdmin } from '../../policy/access.ts';
import { forChat } from '../../support/display.ts';
import { CHAT_VALUE } from '../../table.ts';
import { next, type Gate } from '../context.ts';

/** An admin hears of one version once for this long. */
const TOLD_TTL_MS = 90 * 24 * 3600 * 1000;

export function settingsProblemsText(problems: readonly string[]): string {
  return [
    'settings.json has problems, so the defaults apply where it is wrong (only admins are told this):',
    ...problems.map((problem) => `• ${forChat(problem)}`),
    'Check a fix with `npm run settings -- validate FILE` and upload it with `npm run settings -- put FILE`.',
  ].join('\n');
}

export const tellAdminsOfSettingsProblems: Gate = async ({ person, settings, thread }, deps) => {
  if (!person || !isAdmin(settings.access, person)) return next();
  const { problems, version } = await deps.settingsProblems();
  if (problems.length === 0 || !version) return next();
  const state = await deps.chatState();
  const toldKey = CHAT_VALUE.settingsProblemsTold(version, `${person.adapter}:${person.userId}`);
  if (!(await state.setIfNotExists(toldKey, true, TOLD_TTL_MS))) return next();
  try {
    await thread.tell(settingsProblemsText(problems));
  } catch (error) {
    // Not told after all: the next message of theirs tries again; the prompt itself goes on.
    await state.delete(toldKey);
    deps.logger.warn('could not tell an admin of the problems of settings.json', { error });
  }
  return next();
};
