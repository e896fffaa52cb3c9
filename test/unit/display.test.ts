import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forChat, forTerminal } from '../../shared/support/display.ts';
import { formatRuns } from '../../shared/policy/kill-switch.ts';

const HOSTILE = '\u001b[2J\u001b[H\u009b31mAll runs stopped.\r\n```<!channel> <https://phish.example|sign in> @here \u202eevil';

test('forTerminal shows every control character as an escape: no sequence can clear the screen or forge a line', () => {
  assert.equal(forTerminal('plain slack:C0123:1712.5 event events/a.json'), 'plain slack:C0123:1712.5 event events/a.json');
  const shown = forTerminal(HOSTILE);
  assert.equal(shown, '\\x1b[2J\\x1b[H\\x9b31mAll runs stopped.\\x0d\\x0a```<!channel> <https://phish.example|sign in> @here \\u202eevil');
  assert.doesNotMatch(shown, /[\u0000-\u001f\u007f-\u009f\u202e]/);
  assert.equal(forTerminal('tab\there\u2028'), 'tab\\x09here\\u2028');
});

test('forChat makes markup inert too: no code block closes, no mention or link, no bare @mention', () => {
  const shown = forChat(HOSTILE);
  assert.doesNotMatch(shown, /[`<>]|@here/);
  assert.match(shown, /&lt;!channel&gt; &lt;https:\/\/phish\.example\|sign in&gt;/);
  assert.match(shown, /\u02cb\u02cb\u02cb/);
  assert.equal(forChat('a & b'), 'a &amp; b');
  assert.equal(forChat('slack:C0123:1712.5'), 'slack:C0123:1712.5');
});

test('the runs table escapes each cell before it lines the columns up', () => {
  const runs = [{ threadId: 'slack:C1:1.1', runId: 'r', requester: `bob${HOSTILE}`, steps: 1, costUsd: 0.5, queued: 0 }];
  for (const escape of [forTerminal, forChat]) {
    const table = formatRuns(runs, escape, 0);
    const lines = table.split('\n');
    assert.equal(lines.length, 2, table);
    assert.match(lines[1]!, /^slack:C1:1\.1 +bob\S/);
    assert.doesNotMatch(table, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  }
  assert.doesNotMatch(formatRuns(runs, forChat, 0), /```|<!channel>/);
});
