// The console's one page: plain HTML and a small script that renders the view the server streams
// (server-sent events), posts messages as a chosen user, and presses Stop. No framework: the page is
// a view of the local stack, and a test drives it in a real browser.
export const CONSOLE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Threadwork local console</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;display:grid;grid-template-columns:1fr 18rem;min-height:100vh;background:#f6f6f4;color:#1d1c1d}
main{padding:1rem 1.5rem}aside{border-left:1px solid #ddd;padding:1rem;background:#fff}
h1{font-size:1.2rem;margin:.2rem 0 1rem}h2{font-size:1rem;margin:.5rem 0}
form{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:1rem}textarea{flex:1 1 100%;min-height:3.5rem;font:inherit}
.thread{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6rem .8rem;margin:.7rem 0}
.thread header{display:flex;justify-content:space-between;align-items:center;color:#666;font-size:.85rem}
.msg{margin:.35rem 0}.msg b{margin-right:.4rem}.msg.bot b{color:#1264a3}.msg time{color:#888;font-size:.75rem}
.msg pre{white-space:pre-wrap;margin:.1rem 0;font-family:inherit}.only{color:#666;font-style:italic}
.streaming::after{content:" ▍";color:#1264a3}.status{color:#888;font-style:italic}
details.tool{background:#f3f3ff;border-radius:4px;margin:.3rem 0;padding:.2rem .5rem}details.tool pre{white-space:pre-wrap;font-size:.8rem;max-height:16rem;overflow:auto}
.error{color:#a00}button{font:inherit}
</style></head>
<body><main>
<h1>Threadwork local console</h1>
<form id="post">
  <label>as <select id="user"></select></label>
  <label>in <select id="channel"></select></label>
  <label>thread <select id="thread"><option value="">a new thread (mentions the agent)</option></select></label>
  <textarea id="text" placeholder="Message the agent"></textarea>
  <button type="submit">Send</button>
</form>
<div id="threads"><p>No threads yet: send a message.</p></div>
</main>
<aside><h2>Runs</h2><p id="runs">none</p></aside>
<script>
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'})[c]);
const time = (ms) => new Date(ms).toLocaleTimeString();
function fill(select, values, keep) {
  const current = select.value;
  const options = keep.concat(values.map((v) => '<option value="' + esc(v.value ?? v) + '">' + esc(v.label ?? v) + '</option>'));
  const html = options.join('');
  if (select.dataset.html === html) return;
  select.innerHTML = html;
  select.dataset.html = html;
  // Keep the choice across updates; a first fill keeps the first option.
  if ([...select.options].some((o) => o.value === current)) select.value = current;
}
// Tool calls a person opened stay open when the view is drawn again.
const openTools = new Set();
document.addEventListener('toggle', (event) => {
  const id = event.target.dataset?.id;
  if (id) event.target.open ? openTools.add(id) : openTools.delete(id);
}, true);
function render(view) {
  fill($('user'), view.users, []);
  fill($('channel'), view.channels.length ? view.channels : ['C0LOCAL'], []);
  fill($('thread'), view.threads.map((t) => ({ value: t.channel + ' ' + t.threadTs, label: t.channel + ' · ' + (t.messages[0]?.text ?? '').slice(0, 40) })), ['<option value="">a new thread (mentions the agent)</option>']);
  $('runs').textContent = view.runs.running + ' running, ' + view.runs.total + ' since start';
  $('threads').innerHTML = view.threads.map((t) => {
    const messages = t.messages.map((m) => '<div class="msg ' + (m.bot ? 'bot' : 'user') + (m.onlyFor ? ' only' : '') + '"><b>' + esc(m.who) + '</b><time>' + time(m.at) + '</time>' +
      (m.onlyFor ? ' (only ' + esc(m.onlyFor) + ' sees this)' : '') + '<pre class="' + (m.streaming ? 'streaming' : '') + '">' + esc(m.text) + '</pre></div>').join('');
    const tools = t.toolCalls.map((c) => '<details class="tool" data-tool="' + esc(c.name) + '" data-id="' + esc(c.id) + '"' + (openTools.has(c.id) ? ' open' : '') + '><summary>🔧 ' + esc(c.name) + (c.status ? ' · ' + esc(c.status) : ' · running…') + '</summary><pre>' + esc(c.input) + '</pre>' +
      (c.result !== undefined ? '<pre class="' + (c.status === 'error' ? 'error' : '') + '">' + esc(c.result) + '</pre>' : '') + '</details>').join('');
    const stop = t.running ? '<button class="stop" data-channel="' + esc(t.channel) + '" data-ts="' + esc(t.threadTs) + '">Stop</button>' : '';
    return '<section class="thread" data-thread="' + esc(t.threadId) + '"><header><span>' + esc(t.channel) + ' · ' + esc(t.threadTs) + (t.running ? ' · running' : '') + '</span>' + stop + '</header>' +
      messages + tools + (t.status ? '<div class="status">agent ' + esc(t.status) + '</div>' : '') + '</section>';
  }).join('') || '<p>No threads yet: send a message.</p>';
}
new EventSource('events').onmessage = (event) => render(JSON.parse(event.data));
$('post').onsubmit = async (event) => {
  event.preventDefault();
  const [channel, threadTs] = ($('thread').value || $('channel').value + ' ').split(' ');
  const body = { user: $('user').value, channel, text: $('text').value, ...(threadTs ? { threadTs } : {}) };
  const answer = await fetch('post', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (answer.ok) $('text').value = ''; else alert(await answer.text());
};
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button.stop');
  if (!button) return;
  await fetch('stop', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: $('user').value, channel: button.dataset.channel, threadTs: button.dataset.ts }) });
});
</script></body></html>`;
