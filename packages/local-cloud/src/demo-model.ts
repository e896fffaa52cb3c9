// The local demo model (`LOCAL_MODEL=demo`, and `npm start`'s default without AWS credentials): a
// small deterministic planner behind the Bedrock stand-in, so a newcomer sees the agent use its
// sandbox without an AWS account. It answers over the same Converse/ConverseStream protocol as
// Bedrock, so the product code is the same as in a deployment:
//   a fenced shell block           -> bash, then the output
//   "create FILE with TEXT"        -> write
//   "read FILE"                    -> read
//   "upload FILE"                  -> upload
//   "remind me in N minutes TEXT"  -> write of a one-shot event file in this channel's events folder
//   anything else                  -> what it can do, and how to switch to Bedrock
import type { ContentBlock, Message } from '@aws-sdk/client-bedrock-runtime';
import type { RecordedRequest, ScriptedTurn } from './bedrock.ts';

/** Pause between streamed pieces, so streaming shows in the chat. */
const PIECE_DELAY_MS = 40;

export const DEMO_HELP =
  "I'm the local demo model: I follow a few fixed patterns, so you can watch the agent use its sandbox without AWS. Try:\n" +
  '- a shell command in a fenced code block (a line of ```, the command, a line of ```): I run it with bash\n' +
  '- `create notes.txt with some text`, `read notes.txt`, `upload notes.txt`\n' +
  '- `remind me in 5 minutes to stretch`\n' +
  'For a real model, export AWS credentials with Amazon Bedrock access (or set LOCAL_MODEL=bedrock) and restart npm start.';

const say = (text: string): ScriptedTurn => ({ text, delayMs: PIECE_DELAY_MS });
const use = (name: string, input: object, text: string): ScriptedTurn => ({
  text,
  toolUses: [{ name, input, chunks: 3 }],
  delayMs: PIECE_DELAY_MS,
});

const textOf = (message: Message | undefined) => (message?.content ?? []).map((block) => block.text ?? '').join('');

/** What a tool result said, as text (its text blocks, else its JSON). */
function resultText(block: ContentBlock): string {
  const parts = block.toolResult?.content ?? [];
  return parts.map((part) => part.text ?? (part.json === undefined ? '' : JSON.stringify(part.json))).join('\n');
}

/** `s` in a code block that no backticks inside it can close. */
function fenced(s: string): string {
  const fence = '`'.repeat(Math.max(3, ...[...s.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return `${fence}\n${s.trimEnd() || '(no output)'}\n${fence}`;
}

/** The report after a tool ran: what was done and what came back. */
function report(request: RecordedRequest, results: ContentBlock[]): ScriptedTurn {
  const uses = (request.body.messages ?? [])
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.content ?? [])
    .flatMap((b) => (b.toolUse ? [b.toolUse] : []));
  const pieces = results.map((block) => {
    const used = uses.find((u) => u.toolUseId === block.toolResult?.toolUseId);
    const input = (used?.input ?? {}) as Record<string, string>;
    const failed = block.toolResult?.status === 'error';
    const output = resultText(block);
    if (failed) return `The ${used?.name ?? 'tool'} call failed:\n${fenced(output)}`;
    switch (used?.name) {
      case 'bash':
        return `I ran \`${input.command?.split('\n')[0]}\`${input.command?.includes('\n') ? ' …' : ''}. Its output:\n${fenced(output)}`;
      case 'read':
        return `${input.path} says:\n${fenced(output)}`;
      case 'upload':
        return `Posted ${input.path} in this thread.`;
      case 'write': {
        const schedule = /"schedule": "([^"]+)"/.exec(input.content ?? '')?.[1];
        return schedule ? `Reminder set: it fires at ${schedule.replace('T', ' ')} UTC.` : `Saved ${input.path}.`;
      }
      default:
        return `Done: ${output}`;
    }
  });
  return say(pieces.join('\n\n'));
}

/** The system prompt's thread id and this channel's events folder (context/system-prompt.ts writes them). */
function threadOf(request: RecordedRequest): { threadId?: string; eventsPath?: string; now?: Date } {
  const system = (request.body.system ?? []).map((block) => block.text ?? '').join('\n');
  const now = /Current time: (\S+)/.exec(system)?.[1];
  return {
    threadId: /thread id: (\S+?);/.exec(system)?.[1],
    eventsPath: /event file into (\/workspace\/\S+?) \(/.exec(system)?.[1],
    now: now ? new Date(now) : undefined,
  };
}

/** A one-shot schedule N minutes from `now`, as a UTC local date-time. */
const inMinutes = (now: Date, minutes: number) => new Date(now.getTime() + minutes * 60_000).toISOString().slice(0, 19);

const LANGUAGE_LINE = /^(?:sh|bash|shell|zsh|console)\n/;

/**
 * The shell block of a message. The chat adapters hand the runtime plain text, where a code block
 * is the lines after the text that introduced it, its fences gone (in Slack, a language tag stays
 * as its first line): "run this:\nsh\necho hi". A fence that did arrive counts too, closed or not.
 */
function shellBlock(said: string): string | undefined {
  const fenced = /```(?:[\w-]*\n)?([\s\S]*?)(?:```|$)/.exec(said)?.[1];
  const paragraph = /:[ \t]*\n([\s\S]+)$/.exec(said)?.[1];
  return (fenced ?? paragraph)?.replace(LANGUAGE_LINE, '').trim() || undefined;
}

/** The plan for a person's message. */
function plan(text: string, request: RecordedRequest, now: Date): ScriptedTurn {
  // The model sees "Name: text"; a mention of the bot may lead the text.
  const said = text.replace(/^[^:\n]{1,80}:\s*/, '').replace(/^(?:<@\w+>|@\S+)\s*/, '');
  const shell = shellBlock(said);
  if (shell) return use('bash', { command: shell }, 'Running it in the sandbox.');

  const reminder = /^remind me in (\d+) minutes?\s+(?:to\s+)?([\s\S]+)$/i.exec(said);
  if (reminder) {
    const { threadId, eventsPath, now: runTime = now } = threadOf(request);
    if (!eventsPath || !threadId) return say('I cannot set reminders here: this thread has no sandbox to write the event file from.');
    const minutes = Number(reminder[1]);
    const what = reminder[2]!.trim();
    const event = { type: 'one-shot', threadId, text: `Reminder: ${what}`, schedule: inMinutes(runTime, minutes), timezone: 'UTC' };
    const path = `${eventsPath.replace(/\/$/, '')}/reminder-${runTime.getTime()}.json`;
    return use(
      'write',
      { path, content: `${JSON.stringify(event, null, 2)}\n` },
      `I'll remind you in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    );
  }
  const create = /^create (?:a )?(?:file )?(\S+) with(?: the text| content)?:?\s+([\s\S]+)$/i.exec(said);
  if (create) return use('write', { path: create[1], content: `${create[2]!.trim()}\n` }, `Creating ${create[1]}.`);
  const read = /^read (?:the )?(?:file )?(\S+)$/i.exec(said.trim());
  if (read) return use('read', { path: read[1] }, `Reading ${read[1]}.`);
  const upload = /^upload (?:the )?(?:file )?(\S+)$/i.exec(said.trim());
  if (upload) return use('upload', { path: upload[1] }, `Uploading ${upload[1]}.`);
  // An event file's firing arrives as its text.
  const fired = /Reminder: [\s\S]+/.exec(text)?.[0];
  if (fired) return say(`⏰ ${fired.trim()}`);
  return say(DEMO_HELP);
}

/**
 * The Bedrock stand-in's default answer (BedrockFake.setDefault): the demo planner. Times come from
 * the system prompt's current time (the run's), else from `clock`.
 */
export function demoModel(clock: () => Date = () => new Date()): (request: RecordedRequest) => ScriptedTurn {
  return (request) => {
    const last = request.body.messages?.at(-1);
    const results = (last?.content ?? []).filter((block) => block.toolResult);
    if (last?.role === 'user' && results.length > 0) return report(request, results);
    // Only the tools this call offers may be used (a summary call offers none).
    const offered = new Set((request.body.toolConfig?.tools ?? []).map((t) => t.toolSpec?.name));
    const turn = plan(textOf(last), request, clock());
    const wanted = turn.toolUses?.[0]?.name;
    if (wanted && !offered.has(wanted)) return say(`I would use the ${wanted} tool for that, but this conversation does not offer it.`);
    return turn;
  };
}
