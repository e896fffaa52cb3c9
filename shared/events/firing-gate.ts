// Before an event's firing starts a new thread in a channel: would dispatch refuse its prompt there,
// or hold it? Then no thread is started (a channel filling with announcements that each get only a
// refusal is the harm), and the firing is refused with the reason. The same checks as dispatch's, in
// its order: access, pause, budgets, the concurrent-run limits. A firing into an existing thread goes
// on to dispatch, which refuses or holds it there as it would a person's message.
import { EVENT_AUTHOR_ID, useRefusal } from '../policy/access.ts';
import { budgetSpentText, budgetsFor, spentBudget } from '../policy/budgets.ts';
import { slotsTaken } from '../run/capacity.ts';
import { channelRunsKeyOf, deploymentRunsKey } from '../table.ts';
import { pauseState, type TableDeps } from '../policy/pause.ts';
import type { Settings } from '../settings/schema.ts';
import { triggerKindOf } from '../run/trigger-kind.ts';
import type { Firing } from './fire.ts';

export interface FiringGateDeps {
  table: TableDeps;
  settings(): Promise<Settings>;
  now?: () => Date;
}

/** Why the firing may not start a thread now; undefined when it may (or goes to an existing thread). */
export async function firingRefusal(deps: FiringGateDeps, firing: Firing): Promise<string | undefined> {
  if (firing.threadId || !firing.adapterId || !firing.channelId) return undefined;
  const channel = `${firing.adapterId}:${firing.channelId}`;
  const settings = await deps.settings();
  if (useRefusal(settings.access, undefined, channel)) return `the agent does not work in channel ${channel} (access in settings.json)`;
  const pause = await pauseState(deps.table);
  if (pause.paused) return `the deployment is paused (by ${pause.by}): nothing new starts until it is resumed`;
  const trigger = triggerKindOf({ author: { userId: EVENT_AUTHOR_ID, userName: '' }, source: firing.source, heartbeat: firing.heartbeat });
  const spender = { adapter: firing.adapterId, channel, ...(firing.causedBy ? { user: firing.causedBy } : {}), trigger };
  const spent = await spentBudget(deps.table, budgetsFor(settings.budgets, spender, deps.now?.() ?? new Date()));
  if (spent) return budgetSpentText(spent.refused, spent.spentUsd);
  const { maxConcurrentRunsPerChannel, maxConcurrentRuns } = settings.limits;
  if ((await slotsTaken(deps.table, channelRunsKeyOf(channel))) >= maxConcurrentRunsPerChannel) {
    return `${maxConcurrentRunsPerChannel} runs are already running in channel ${channel} (maxConcurrentRunsPerChannel in settings.json)`;
  }
  if ((await slotsTaken(deps.table, deploymentRunsKey)) >= maxConcurrentRuns) {
    return `${maxConcurrentRuns} runs are already running in this deployment (maxConcurrentRuns in settings.json)`;
  }
  return undefined;
}
