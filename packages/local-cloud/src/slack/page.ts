// `GET /`: a read-only page of the workspace's channels and threads, refreshing every second, to
// watch a conversation with the local stack in a browser.
import type { StoredMessage, Workspace } from './state.ts';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** A time the browser shows in its own time zone (the script at the end of the page), as the Slack client does. */
export const localTime = (epochMs: number) => {
  const iso = new Date(epochMs).toISOString();
  return `<time datetime="${iso}">${iso.slice(11, 19)} UTC</time>`;
};

/** Turns every <time datetime> into the browser's local time. */
export const LOCAL_TIMES_SCRIPT =
  "<script>for(const t of document.querySelectorAll('time[datetime]'))t.textContent=new Date(t.getAttribute('datetime')).toLocaleTimeString()</script>";

function badgesOf(m: StoredMessage): string[] {
  const badges: string[] = [];
  if (m.local.stream) {
    const n = m.local.stream.appends.filter((a) => a.text).length;
    badges.push(m.local.stream.state === 'streaming' ? `streaming… ${n} pieces` : `streamed in ${n} pieces`);
  }
  const edits = m.local.versions.filter((v) => v.method === 'chat.update').length;
  if (edits > 0) badges.push(`edited ×${edits}`);
  for (const r of m.reactions ?? []) badges.push(`:${r.name}: ${r.count}`);
  return badges;
}

/** Mentions as the Slack client shows them: @name. */
const mentionsAsNames = (workspace: Workspace, text: string) =>
  text.replace(/<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g, (_, id: string, name?: string) => `@${name ?? workspace.users.get(id)?.name ?? id}`);

function renderMessage(workspace: Workspace, m: StoredMessage): string {
  const who = workspace.users.get(m.user)?.name ?? m.user;
  const badges = badgesOf(m).map((b) => `<span class="badge">${escapeHtml(b)}</span>`);
  const fileLinks = (m.files ?? []).map((f) => `<div class="file">📎 ${escapeHtml(String(f.name))}</div>`).join('');
  const text = mentionsAsNames(workspace, m.text || (m.blocks ? '[blocks]' : ''));
  const meta = `<div class="meta"><b>${escapeHtml(who)}</b> ${localTime(m.local.createdAt)} ${badges.join(' ')}</div>`;
  return `<div class="msg ${m.bot_id ? 'bot' : 'user'}">${meta}<pre>${escapeHtml(text)}</pre>${fileLinks}</div>`;
}

function renderThread(workspace: Workspace, channel: string, live: StoredMessage[], top: StoredMessage): string {
  const replies = live.filter((r) => r.thread_ts === top.ts && r.ts !== top.ts).map((r) => renderMessage(workspace, r));
  const ephemeral = workspace.ephemeral
    .filter((e) => e.channel === channel && e.thread_ts === top.ts)
    .map(
      (e) =>
        `<div class="msg eph"><i>only visible to ${escapeHtml(workspace.users.get(e.visibleTo)?.name ?? e.visibleTo)}</i> ${localTime(e.local.createdAt)}<pre>${escapeHtml(mentionsAsNames(workspace, e.text))}</pre></div>`,
    );
  const status = workspace.statuses.get(`${channel}:${top.ts}`);
  const statusLine = status ? `<div class="status">${escapeHtml(workspace.identity.botName)} ${escapeHtml(status)}</div>` : '';
  return `<div class="thread">${renderMessage(workspace, top)}<div class="replies">${replies.join('')}${ephemeral.join('')}${statusLine}</div></div>`;
}

export function renderPage(workspace: Workspace, eventsUrl: string | undefined): string {
  const { teamId, botName, botUserId } = workspace.identity;
  const sections = [...workspace.channels.entries()].map(([id, list]) => {
    const live = list.filter((m) => !m.local.deleted);
    const threads = live.filter((m) => !m.thread_ts || m.thread_ts === m.ts).map((top) => renderThread(workspace, id, live, top));
    const name = id.startsWith('D') ? `DM ${id}` : `#${workspace.channelNames.get(id) ?? id.toLowerCase()} (${id})`;
    return `<section><h2>${escapeHtml(name)}</h2>${threads.join('') || '<p>No messages yet.</p>'}</section>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">
<title>Local Slack</title><style>
body{font-family:system-ui,sans-serif;margin:1.5rem;background:#f8f8f8;color:#1d1c1d}
section{margin-bottom:2rem}.thread{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem;margin:.5rem 0}
.replies{margin-left:1.5rem;border-left:3px solid #eee;padding-left:.75rem}.msg{margin:.35rem 0}
.msg.bot b{color:#1264a3}.meta time{color:#888;font-size:.8em}.badge{background:#eef;border-radius:4px;padding:0 .3rem}
pre{white-space:pre-wrap;margin:.15rem 0;font-family:inherit}.status{color:#888;font-style:italic}.eph{color:#666}
</style></head><body><h1>Local Slack — ${escapeHtml(teamId)}</h1>
<p>Bot ${escapeHtml(botName)} (${escapeHtml(botUserId)}) · events → ${escapeHtml(eventsUrl ?? 'not set')}</p>
${sections.join('') || '<p>No channels yet.</p>'}${LOCAL_TIMES_SCRIPT}</body></html>`;
}
