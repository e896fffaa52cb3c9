// What a chat command is. Each command is one file in this folder, listed once in registry.ts: its
// words (`parse`), where it is answered (`runsAt`), who may use it (`who`) and what it does
// (`answer`). The webhook and admission iterate the registry; nothing else names a command.
import type { ControlDeps } from '../run/control.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { Person } from '../policy/access.ts';
import type { Prompt, RunInput } from '../contracts.ts';
import type { Settings } from '../settings/schema.ts';
import type { StoreDeps } from '../context/store.ts';
import type { AgentDefinition } from '../agents/definition.ts';

/**
 * Who may use a command. `anyone`: whoever may use the agent in the channel (settings.json `access`);
 * `requester`: whoever may stop or steer the thread's running run (`access.control`: its requester and
 * admins, or anyone allowed); `admin`: people in `access.admins`, and a command of theirs is one only
 * where admins are named (elsewhere its words are a prompt like any other).
 */
export type CommandAudience = 'anyone' | 'requester' | 'admin';

/** Whoever sent a command, and where. */
export interface CommandRequest<Args> {
  args: Args;
  /** Absent for an event file's or a trigger's prompt: nobody sent it. */
  who?: Person;
  /** How the sender is named in the thread (a steer reaches the model under this name). */
  name: string;
  /** `adapter:channel` */
  channel: string;
  /** The thread it acts on; absent for a slash command from someone with no recent thread in the channel. */
  threadId?: string;
  /** `who: 'requester'`: the thread's running run, whose requester the sender was checked against. */
  run?: RunInput;
  /** The prompt that carried it, for a command answered in dispatch. */
  prompt?: Prompt;
}

/** What a command says back. */
export interface Answer {
  text: string;
  /** For everyone in the thread; otherwise only the sender sees it (ephemeral where the platform can). */
  toThread?: boolean;
}

export interface CommandDeps {
  control: ControlDeps;
  logger: JsonLogger;
  /** settings.json as this function reads it (dispatch: the admission's snapshot). */
  settings(): Promise<Settings>;
  /** The data bucket: dispatch has it, the webhooks do not (see `storeOf`). */
  store?: StoreDeps;
  /**
   * The agent definitions a thread's channel can use: dispatch has them. Given, not imported, so the
   * AGENT.md parser (and its YAML library) stays out of the webhooks' bundles, which only read commands' words.
   */
  agents?: { list(threadId: string): Promise<{ agents: AgentDefinition[]; problems: string[] }> };
}

/** The data bucket, for a command that reads or writes it: such a command runs at dispatch and has no slash form. */
export function storeOf(deps: CommandDeps): StoreDeps {
  if (!deps.store) throw new Error('This command reads the data bucket: it runs at dispatch, and has no slash form');
  return deps.store;
}

export interface Command<Args = unknown> {
  /** One word, used in logs (`<name> command refused: not an admin`). */
  name: string;
  /** The command's arguments when `text` (the message, without any leading mention of the bot) is this command. */
  parse(text: string): Args | undefined;
  /**
   * Where a message carrying it is answered: `webhook` at once, beside a running run (stop, steer);
   * `dispatch` in the thread's order, after the access check (a prompt's turn, without a run).
   * A slash command has no thread to wait in: the webhook always answers it.
   */
  runsAt: 'webhook' | 'dispatch';
  who: CommandAudience;
  /** The Slack slash command that also sends it (slack-app-manifest.yaml declares each), with what follows it. */
  slash?: { command: `/${string}`; hint?: string };
  /** A button that also sends it (on a card the runtime posts): its action id, and the command's words it stands for. */
  button?: { actionId: string; text: string };
  /** `who: 'admin'`: what anyone else is told. */
  refused?: string;
  answer(request: CommandRequest<Args>, deps: CommandDeps): Promise<Answer>;
}

/** Checks a command's shape where it is written; the registry holds them without their argument types. */
export const defineCommand = <Args>(command: Command<Args>): Command => command as Command;

/** A message's text without a leading mention of the bot. */
export const withoutMention = (text: string): string =>
  text
    .trim()
    .replace(/^(<@[A-Z0-9]+>|@\S+)\s*/, '')
    .trim();
