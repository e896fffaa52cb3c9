// The stand-ins post as any user on request (the chat CLI's /_local/post). A web page elsewhere in
// the browser must not: a cross-site post, a DNS-rebound Host and a post that is not JSON are
// refused, and nothing is stored; the chat CLI's own request still goes through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startSlackStandIn } from '../src/slack/index.ts';
import { startTeamsStandIn } from '../src/teams/index.ts';

function send(base: string, path: string, method: string, headers: Record<string, string>, body = '') {
  return new Promise<number>((resolve, reject) => {
    const sent = request(
      new URL(path, base),
      { method, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

/** The attacks a page elsewhere could make on `base`'s /_local/post, each answered with a refusal. */
async function assertRefused(base: string, body: string) {
  const port = new URL(base).port;
  assert.equal(await send(base, '/_local/post', 'POST', { 'content-type': 'text/plain', origin: 'http://evil.example' }, body), 403);
  const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}` };
  assert.equal(await send(base, '/_local/post', 'POST', { ...rebound, 'content-type': 'application/json' }, body), 403);
  assert.equal(await send(base, '/', 'GET', { host: rebound.host }), 403, 'nor can it read the conversations');
  assert.equal(await send(base, '/_local/post', 'POST', { 'content-type': 'text/plain' }, body), 415);
}

test('the Slack stand-in refuses a post or a read from a page elsewhere, and stores nothing', async () => {
  const slack = await startSlackStandIn({ signingSecret: 'secret', botToken: 'xoxb-local-test' });
  try {
    await assertRefused(slack.url, JSON.stringify({ channel: 'C0LOCAL', text: 'from a web page' }));
    assert.equal(slack.messages.all().length, 0);
    const own = await send(
      slack.url,
      '/_local/post',
      'POST',
      { 'content-type': 'application/json' },
      JSON.stringify({ channel: 'C0LOCAL', text: 'from the cli' }),
    );
    assert.equal(own, 200);
    assert.equal(slack.messages.all().length, 1);
  } finally {
    await slack.close();
  }
});

test('the Teams stand-in refuses a post or a read from a page elsewhere, and stores nothing', async () => {
  const teams = await startTeamsStandIn({ appId: '00000000-0000-4000-8000-0000000000b1', appPassword: 'secret' });
  try {
    await assertRefused(teams.url, JSON.stringify({ text: 'from a web page' }));
    assert.equal(teams.state.activities.size, 0);
  } finally {
    await teams.close();
  }
});
