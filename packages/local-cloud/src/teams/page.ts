// GET / of the Teams stand-in: every conversation with its messages, the bot's edits and deletions,
// refreshed every two seconds.
import type { TeamsState } from './state.ts';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function renderTeamsPage(state: TeamsState, messagingEndpoint: string | undefined): string {
  const conversations = [...state.activities].map(([id, list]) => {
    const items = list
      .filter((a) => a.type === 'message')
      .map((a) => {
        const who = escape(a.from.name ?? a.from.id);
        const text = a.deleted ? '<i>(deleted)</i>' : escape(a.text ?? (a.attachments?.length ? '[card]' : ''));
        const notes = [a.edits ? `edited ${a.edits}×` : '', a.targeted ? 'only visible to one user' : ''].filter(Boolean).join(', ');
        return `<li><b>${who}</b>: ${text}${notes ? ` <small>(${notes})</small>` : ''}</li>`;
      })
      .join('');
    const kind = state.conversationTypes.get(id) ?? 'conversation';
    return `<section><h2>${escape(kind)} <small>${escape(id)}</small></h2><ul>${items}</ul></section>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2"><title>Teams stand-in</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}small{color:#666}section{border-top:1px solid #ddd}</style></head>
<body><h1>Teams stand-in</h1><p>Messaging endpoint: ${escape(messagingEndpoint ?? '(not set)')}. Talk to the bot with <code>npm run chat -- --teams "hello"</code>.</p>
${conversations.join('') || '<p>No conversations yet.</p>'}</body></html>`;
}
