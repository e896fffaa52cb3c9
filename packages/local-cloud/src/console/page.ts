// The console's one page: plain HTML and a small script that renders the view the server streams
// (server-sent events): the threads of Slack and Teams, with tool calls folded and the bot's buttons;
// a box to post as a chosen user; and the side panels. No framework: the page is a view of the local
// stack, and a test drives it in a real browser. Times are shown in the browser's own time zone.
export const CONSOLE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Threadwork local console</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;display:grid;grid-template-columns:1fr 22rem;min-height:100vh;background:#f6f6f4;color:#1d1c1d}
main{padding:1rem 1.5rem}aside{border-left:1px solid #ddd;padding:.5rem 1rem;background:#fff;font-size:.85rem}
h1{font-size:1.2rem;margin:.2rem 0 1rem}h2{font-size:.95rem;margin:.9rem 0 .3rem}
form{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:1rem}textarea{flex:1 1 100%;min-height:3.5rem;font:inherit}
.thread{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6rem .8rem;margin:.7rem 0}
.thread header{display:flex;justify-content:space-between;align-items:center;color:#666;font-size:.85rem}
.platform{font-weight:600;color:#444}.msg{margin:.35rem 0}.msg b{margin-right:.4rem}.msg.bot b{color:#1264a3}.msg time{color:#888;font-size:.75rem}
.msg pre{white-space:pre-wrap;margin:.1rem 0;font-family:inherit}.only{color:#666;font-style:italic}
.streaming::after{content:" ▍";color:#1264a3}.status{color:#888;font-style:italic}
details.tool{background:#f3f3ff;border-radius:4px;margin:.3rem 0;padding:.2rem .5rem}details.tool pre{white-space:pre-wrap;font-size:.8rem;max-height:16rem;overflow:auto}
.error{color:#a00}button{font:inherit}button.primary{background:#007a5a;color:#fff;border:0;border-radius:4px;padding:.15rem .7rem}
button.danger{background:#e01e5a;color:#fff;border:0;border-radius:4px;padding:.15rem .7rem}
#banner{display:none;background:#fde8e8;border:1px solid #e0a0a0;border-radius:6px;padding:.5rem .8rem;margin-bottom:1rem}
#banner ul{margin:.3rem 0;padding-left:1.2rem}.state{color:#666;font-size:.8rem;margin-bottom:.5rem}
aside table{border-collapse:collapse;width:100%}aside td{padding:.1rem .2rem;vertical-align:top;word-break:break-all}
.metric{display:flex;justify-content:space-between;align-items:center}.metric svg{background:#f7f7fb}.muted{color:#888}
</style></head>
<body><main>
<h1>Threadwork local console</h1>
<div id="banner" role="alert"><b>settings.json is invalid</b>: the defaults apply where it is wrong.<ul id="problems"></ul>Fix it with <code>npm run settings -- edit</code>.</div>
<form id="post">
  <label>as <input id="user" list="users" size="14" placeholder="a user id or name"></label><datalist id="users"></datalist>
  <label>in <select id="where"></select></label>
  <textarea id="text" placeholder="Message the agent"></textarea>
  <button type="submit">Send</button>
</form>
<div id="threads"><p>No threads yet: send a message.</p></div>
</main>
<aside>
<div class="state" id="state"></div>
<h2>Runs</h2><div id="runs">none</div>
<h2>Metrics, last hour</h2><div id="metrics" class="muted">none yet</div>
<h2>Budgets</h2><div id="budgets" class="muted">none in settings.json</div>
<h2>Event files and schedules</h2><div id="events" class="muted">none</div>
<h2>Audit records</h2><div id="audit" class="muted">none yet</div>
</aside>
<script>
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'})[c]);
const time = (ms) => new Date(ms).toLocaleTimeString();
const usd = (n) => n === undefined || n === null ? '-' : '$' + n.toFixed(4);
function setHtml(el, html) { if (el.dataset.html !== html) { el.innerHTML = html; el.dataset.html = html; } }
let view;
// Tool calls a person opened stay open when the view is drawn again.
const openTools = new Set();
document.addEventListener('toggle', (event) => {
  const id = event.target.dataset?.id;
  if (id) event.target.open ? openTools.add(id) : openTools.delete(id);
}, true);
function where(v) {
  const current = $('where').value;
  const options = v.channels.map((c) => ['{"platform":"slack","channel":"' + c + '"}', 'a new Slack thread in ' + c])
    .concat(v.users.teams.length ? [['{"platform":"teams","kind":"channel"}', 'a new Teams channel thread'], ['{"platform":"teams","kind":"personal"}', 'a Teams personal chat']] : [])
    .concat(v.threads.map((t) => [JSON.stringify(t.platform === 'slack' ? { platform: 'slack', channel: t.channel, threadTs: t.threadTs } : { platform: 'teams', conversationId: t.channel }),
      (t.platform === 'slack' ? 'Slack ' : 'Teams ') + '· ' + (t.messages[0]?.text ?? '').slice(0, 40)]));
  setHtml($('where'), options.map(([value, label]) => '<option value="' + esc(value) + '">' + esc(label) + '</option>').join(''));
  if ([...$('where').options].some((o) => o.value === current)) $('where').value = current;
}
function thread(t) {
  const messages = t.messages.map((m) => '<div class="msg ' + (m.bot ? 'bot' : 'user') + (m.onlyFor ? ' only' : '') + '"><b>' + esc(m.who) + '</b><time>' + time(m.at) + '</time>' +
    (m.onlyFor ? ' (only ' + esc(m.onlyFor) + ' sees this)' : '') + '<pre class="' + (m.streaming ? 'streaming' : '') + '">' + esc(m.text) + '</pre>' +
    (m.buttons ?? []).map((b) => '<button class="press ' + esc(b.style ?? '') + '" data-platform="' + t.platform + '" data-channel="' + esc(t.channel) + '" data-message="' + esc(m.id) + '" data-action="' + esc(b.actionId) + '">' + esc(b.label) + '</button> ').join('') + '</div>').join('');
  const tools = t.toolCalls.map((c) => '<details class="tool" data-tool="' + esc(c.name) + '" data-id="' + esc(c.id) + '"' + (openTools.has(c.id) ? ' open' : '') + '><summary>🔧 ' + esc(c.name) + (c.status ? ' · ' + esc(c.status) : ' · running…') + '</summary><pre>' + esc(c.input) + '</pre>' +
    (c.result !== undefined ? '<pre class="' + (c.status === 'error' ? 'error' : '') + '">' + esc(c.result) + '</pre>' : '') + '</details>').join('');
  const stop = t.running ? '<button class="stop" data-platform="' + t.platform + '" data-channel="' + esc(t.channel) + '" data-ts="' + esc(t.threadTs) + '">Stop</button>' : '';
  const title = t.platform === 'slack' ? esc(t.channel) + ' · ' + esc(t.threadTs) : esc(t.kind ?? 'conversation');
  return '<section class="thread" data-platform="' + t.platform + '" data-thread="' + esc(t.threadId) + '"><header><span><span class="platform">' + (t.platform === 'slack' ? 'Slack' : 'Teams') + '</span> · ' + title + (t.running ? ' · running' : '') + '</span>' + stop + '</header>' +
    messages + tools + (t.status ? '<div class="status">agent ' + esc(t.status) + '</div>' : '') + '</section>';
}
function panels(p) {
  const running = p.running.map((r) => '<tr data-run="' + esc(r.runId) + '"><td>' + esc(r.requester) + '</td><td>' + r.steps + ' steps</td><td class="cost">' + usd(r.costUsd) + '</td></tr>').join('');
  setHtml($('runs'), p.running.length + ' running, ' + p.queued + ' queued' + (running ? '<table>' + running + '</table>' : ''));
  setHtml($('metrics'), p.metrics.map((m) => '<div class="metric" data-metric="' + esc(m.name) + '"><span>' + esc(m.name) + '<br><span class="muted">' + m.total + ' ' + esc(m.unit) + '</span></span>' +
    '<svg width="160" height="28" viewBox="0 0 160 28"><polyline fill="none" stroke="#1264a3" stroke-width="1.5" points="' + esc(m.sparkline) + '"/></svg></div>').join('') || 'none yet');
  setHtml($('budgets'), p.budgets.map((b) => '<div class="budget">' + esc(b.label) + ': <b>' + esc(b.text) + '</b></div>').join('') || 'none in settings.json');
  setHtml($('events'), (p.eventFiles.map((f) => '<div class="event-file">' + esc(f.key) + ' <span class="muted">' + time(Date.parse(f.modifiedAt)) + '</span></div>').join('') +
    p.schedules.map((s) => '<div class="schedule">⏰ ' + esc(s.name) + ' ' + esc(s.expression) + (s.nextFire ? ' <span class="muted">next ' + time(Date.parse(s.nextFire)) + '</span>' : '') + '</div>').join('')) || 'none');
  setHtml($('audit'), p.audit.map((a) => '<details class="audit" data-run="' + esc(a.runId) + '"><summary>' + time(Date.parse(a.endedAt)) + ' ' + esc(a.outcome) + ' · ' + a.steps + ' steps · ' + usd(a.costUsd) + '</summary>' +
    '<div>' + esc(a.threadId) + '</div>' + a.toolCalls.map((c) => '<div>🔧 ' + esc(c.name) + ': ' + esc(c.outcome) + '</div>').join('') + '</details>').join('') || 'none yet');
  $('banner').style.display = p.settingsProblems.length ? 'block' : 'none';
  setHtml($('problems'), p.settingsProblems.map((x) => '<li>' + esc(x) + '</li>').join(''));
}
function render(v) {
  view = v;
  setHtml($('users'), v.users.slack.concat(v.users.teams).map((u) => '<option value="' + esc(u.id.startsWith('29:') ? u.name : u.id) + '">' + esc(u.name) + '</option>').join(''));
  if (!$('user').value && v.users.slack[0]) $('user').value = v.users.slack[0].id;
  where(v);
  $('state').textContent = v.persisted ? 'State kept in ' + v.persisted + ' (npm start -- --persist)' : 'State in memory: gone when the stack stops';
  setHtml($('threads'), v.threads.map(thread).join('') || '<p>No threads yet: send a message.</p>');
  if (v.panels) panels(v.panels);
}
new EventSource('events').onmessage = (event) => render(JSON.parse(event.data));
async function send(path, body) {
  const answer = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!answer.ok) alert(await answer.text());
  return answer.ok;
}
$('post').onsubmit = async (event) => {
  event.preventDefault();
  const target = JSON.parse($('where').value || '{"platform":"slack","channel":"C0LOCAL"}');
  if (await send('post', { ...target, user: $('user').value, text: $('text').value })) $('text').value = '';
};
document.addEventListener('click', async (event) => {
  const stop = event.target.closest('button.stop');
  const press = event.target.closest('button.press');
  if (stop) {
    const d = stop.dataset;
    await send('stop', d.platform === 'slack' ? { platform: 'slack', user: $('user').value, channel: d.channel, threadTs: d.ts } : { platform: 'teams', user: $('user').value, conversationId: d.channel });
  } else if (press) {
    const d = press.dataset;
    press.disabled = true;
    await send('press', { platform: d.platform, user: $('user').value, channel: d.channel, conversationId: d.channel, messageId: d.message, actionId: d.action });
  }
});
</script></body></html>`;
