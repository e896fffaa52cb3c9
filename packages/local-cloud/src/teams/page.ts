// GET / of the Teams stand-in: every conversation with its messages as the Teams client shows them
// (mentions as @name, times in the browser's time zone, a streamed reply marked while it streams),
// the bot's edits and deletions, refreshed every two seconds.
import { LOCAL_TIMES_SCRIPT, localTime } from '../slack/page.ts';
import type { StoredActivity, TeamsState } from './state.ts';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Teams' mention markup as its client shows it: <at>Name</at> is @Name. */
const mentionsAsNames = (text: string) => text.replace(/<at>([^<]*)<\/at>/g, '@$1');

function streamNote(a: StoredActivity): string {
  if (!a.stream) return '';
  return a.stream.final ? `streamed in ${a.stream.updates + 1} pieces` : `streaming… ${a.stream.updates + 1} pieces`;
}

export function renderTeamsPage(state: TeamsState, messagingEndpoint: string | undefined): string {
  const conversations = [...state.activities].map(([id, list]) => {
    const items = list
      .filter((a) => a.type === 'message')
      .map((a) => {
        const who = escape(a.from.name ?? a.from.id);
        const text = a.deleted ? '<i>(deleted)</i>' : escape(mentionsAsNames(a.text ?? (a.attachments?.length ? '[card]' : '')));
        const notes = [streamNote(a), a.edits ? `edited ${a.edits}×` : '', a.targeted ? 'only visible to one user' : '']
          .filter(Boolean)
          .join(', ');
        return `<li><b>${who}</b> ${localTime(Date.parse(a.timestamp))}: ${text}${notes ? ` <small>(${notes})</small>` : ''}</li>`;
      })
      .join('');
    const kind = state.conversationTypes.get(id) ?? 'conversation';
    return `<section><h2>${escape(kind)} <small>${escape(id)}</small></h2><ul>${items}</ul></section>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2"><title>Teams stand-in</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}small,time{color:#666}section{border-top:1px solid #ddd}</style></head>
<body><h1>Teams stand-in</h1><p>Messaging endpoint: ${escape(messagingEndpoint ?? '(not set)')}. Talk to the bot with <code>npm run chat -- --teams "hello"</code>.</p>
${conversations.join('') || '<p>No conversations yet.</p>'}${LOCAL_TIMES_SCRIPT}</body></html>`;
}
