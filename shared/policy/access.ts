// Who may use the agent, and who may stop or steer a run: settings.json `access`. Dispatch checks
// every prompt against it before admitting it; the webhook (which does not read settings.json) gets
// what stop and steer need from the thread's actor item, where dispatch puts it at each admission.
import * as z from 'zod';
import { descriptorNamed } from '../platforms/descriptors.ts';

/** `adapter:id`, e.g. `slack:U0123ABC`: ids are only unique per platform. */
const qualifiedId = z
  .string()
  .max(100)
  .regex(/^[a-z][a-z0-9-]*:[^\s:]+$/, 'must be adapter:id, e.g. slack:U0123ABC');
const ids = (max: number) => z.array(qualifiedId).max(max).default([]);

/**
 * How many ids each list may hold. The users, workspaces and admins lists also travel in each busy
 * thread's actor item (for stop and steer), hence their small bounds; channels do not.
 */
export const ACCESS_LIST_LIMITS = Object.freeze({ workspaces: 50, channels: 1_000, users: 300, admins: 50 });

/** Empty lists mean everyone. */
export const accessSchema = z.object({
  /** Workspaces (Slack teams) whose people may use the agent. */
  workspaces: ids(ACCESS_LIST_LIMITS.workspaces),
  /** Channels the agent works in. */
  channels: ids(ACCESS_LIST_LIMITS.channels),
  /** People who may use the agent. */
  users: ids(ACCESS_LIST_LIMITS.users),
  /** Always allowed; may stop or steer any run. */
  admins: ids(ACCESS_LIST_LIMITS.admins),
  /** Who may stop or steer a run: anyone allowed to use the agent, or only its requester (and admins). */
  control: z.enum(['anyone', 'requester']).default('anyone'),
});
export type Access = z.infer<typeof accessSchema> & {
  /** settings.json has an `access` block that cannot be read: nobody is let in until it is fixed. */
  locked?: boolean;
};

export const OPEN_ACCESS: Access = Object.freeze(accessSchema.parse({}));
export const LOCKED_ACCESS: Access = Object.freeze({ ...OPEN_ACCESS, locked: true });

/** The author id of prompts that event files and bus events start: no person asked for them. */
export const EVENT_AUTHOR_ID = 'event';

/** Someone acting through a chat platform, as the platform names them. */
export interface Person {
  adapter: string;
  userId: string;
  /** Their workspace (Slack team), when the payload says. */
  workspace?: string;
}

export type UseRefusal = 'locked' | 'workspace' | 'channel' | 'user';
export type ControlRefusal = 'not-allowed' | 'not-requester';

/** What a person refused for each reason is told (the reasons themselves stay in the logs). */
export const REFUSAL_TEXTS: Record<UseRefusal, string> = {
  locked: "Sorry, I can't take requests right now: my access settings need fixing. The operators can see why in the logs.",
  workspace: "Sorry, I'm not enabled for your workspace.",
  channel: "Sorry, I'm not enabled in this channel. An admin can add it to my settings.",
  user: "Sorry, I only take requests from people on my allow-list, and you're not on it. An admin can add you.",
};

const qualified = (adapter: string, id: string | undefined) => (id === undefined ? undefined : `${adapter}:${id}`);
const allows = (list: readonly string[], id: string | undefined) => list.length === 0 || (id !== undefined && list.includes(id));

export const isAdmin = (access: Pick<Access, 'admins'>, who: Person): boolean => access.admins.includes(`${who.adapter}:${who.userId}`);

/**
 * Why `who` may not use the agent in `channel` (`adapter:channel`), or undefined when they may.
 * Without a person (an event's prompt), only the channel counts.
 */
export function useRefusal(access: Access, who: Person | undefined, channel: string): UseRefusal | undefined {
  if (access.locked) return 'locked';
  if (who && isAdmin(access, who)) return undefined;
  if (who && !allows(access.workspaces, qualified(who.adapter, who.workspace))) return 'workspace';
  if (!allows(access.channels, channel)) return 'channel';
  if (who && !allows(access.users, qualified(who.adapter, who.userId))) return 'user';
  return undefined;
}

/** What deciding who may stop or steer a thread's run takes; absent: anyone in the thread may. */
export const controlPolicySchema = z.object({
  requesterOnly: z.boolean(),
  admins: z.array(z.string()),
  users: z.array(z.string()),
  workspaces: z.array(z.string()),
});
export type ControlPolicy = z.infer<typeof controlPolicySchema>;

/**
 * Who may stop or steer runs in the thread `channel` (`adapter:channel`) holds. In a channel the
 * agent does not work in, only admins run anything, so only they (and the requester) count.
 */
export function controlPolicy(access: Access, channel?: string): ControlPolicy | undefined {
  if (access.locked) return { requesterOnly: true, admins: [], users: [], workspaces: [] };
  const requesterOnly = access.control === 'requester' || (channel !== undefined && !allows(access.channels, channel));
  if (!requesterOnly && access.users.length === 0 && access.workspaces.length === 0) return undefined;
  // The requester passed the allow-lists when their prompt was admitted: only they and admins count then.
  return requesterOnly
    ? { requesterOnly, admins: access.admins, users: [], workspaces: [] }
    : { requesterOnly, admins: access.admins, users: access.users, workspaces: access.workspaces };
}

/** Why `who` may not stop or steer the run `requesterId` started, or undefined when they may. */
export function controlRefusal(policy: ControlPolicy | undefined, requesterId: string, who: Person): ControlRefusal | undefined {
  if (!policy || isAdmin(policy, who)) return undefined;
  if (policy.requesterOnly) return who.userId === requesterId ? undefined : 'not-requester';
  const allowed =
    allows(policy.workspaces, qualified(who.adapter, who.workspace)) && allows(policy.users, qualified(who.adapter, who.userId));
  return allowed ? undefined : 'not-allowed';
}

/**
 * The workspace of whoever sent a payload on `adapter`'s platform, as its descriptor reads it (Slack:
 * the author's team; Teams: the tenant); none for a platform this runtime does not know.
 */
export function workspaceOf(adapter: string, raw: unknown): string | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  return descriptorNamed(adapter)?.workspaceOf(raw as Record<string, unknown>);
}
