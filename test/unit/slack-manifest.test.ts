// The Slack app manifest and the README's setup steps name every request URL, and each one is the
// route the webhook serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { SLACK_EVENTS_PATH } from '../../infra/constructs/webhook-api.ts';

const read = (name: string) => readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8');

interface Manifest {
  features: { slash_commands: { command: string; url: string }[] };
  settings: { event_subscriptions: { request_url: string }; interactivity: { request_url: string } };
}

test('slack manifest: every request URL is the SlackEventsUrl placeholder, and the README names each field', () => {
  const manifest = parse(read('slack-app-manifest.yaml')) as Manifest;
  const urls: Record<string, string> = {
    'settings.event_subscriptions.request_url': manifest.settings.event_subscriptions.request_url,
    'settings.interactivity.request_url': manifest.settings.interactivity.request_url,
    ...Object.fromEntries(manifest.features.slash_commands.map((c, i) => [`features.slash_commands[${i}].url`, c.url])),
  };
  assert.deepEqual(
    manifest.features.slash_commands.map((c) => c.command),
    ['/stop', '/steer', '/usage'],
  );
  const readme = read('README.md');
  for (const [field, url] of Object.entries(urls)) {
    assert.equal(url, `https://REPLACE-WITH-SlackEventsUrl${SLACK_EVENTS_PATH}`, field);
    assert.ok(readme.includes(`\`${field}\``), `README names ${field}`);
  }
  const raw = read('slack-app-manifest.yaml');
  assert.equal(raw.split(`https://REPLACE-WITH-SlackEventsUrl${SLACK_EVENTS_PATH}`).length - 1, Object.keys(urls).length, 'no other URL');
});
