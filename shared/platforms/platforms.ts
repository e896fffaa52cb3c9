// The chat platforms as the chat functions use them (shared/platforms/platform.ts): what once
// switched on an adapter's name asks the thread's platform here. Same platforms, same order as
// PLATFORM_DESCRIPTORS (test/unit/platforms.test.ts checks it).
import { parseThreadId } from '../ids.ts';
import type { ChatPlatform, PlatformContext } from './platform.ts';
import { slack } from './slack/platform.ts';
import { teams } from './teams/platform.ts';

export const PLATFORMS = [slack, teams] as const;

/** The list as the contract types it, to iterate. */
const ALL: readonly ChatPlatform[] = PLATFORMS;

/** The platform of an adapter name, if this runtime knows it. */
export function platformNamed(name: string): ChatPlatform | undefined {
  return ALL.find((platform) => platform.name === name);
}

/** The platform of an adapter this deployment serves (the chat has its adapter, so the runtime knows it). */
export function platformOf(name: string): ChatPlatform {
  const platform = platformNamed(name);
  if (!platform) throw new Error(`No chat platform is named ${JSON.stringify(name)}`);
  return platform;
}

/**
 * Why the bot may not act in a thread someone other than its platform named (an event file, a bus
 * event, a trigger): not a thread id, or its platform's refusal. Undefined when it may.
 */
export async function threadProblem(context: PlatformContext, threadId: string): Promise<string | undefined> {
  let adapter: string;
  try {
    ({ adapter } = parseThreadId(threadId));
  } catch (error) {
    return `${JSON.stringify(threadId)} is not a thread id (${(error as Error).message})`;
  }
  return platformNamed(adapter)?.threadProblem(context, threadId);
}
