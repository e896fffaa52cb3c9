// The Slack app manifest and docs/deploy.md's setup steps name every request URL, and each one is the
// route the webhook serves; the manifest asks for no scope Slack would refuse to create it with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { slackDescriptor } from '../../shared/platforms/slack/descriptor.ts';
import { describeRequestUrls, readSlackManifest, requestUrls, SLACK_MANIFEST_FILE } from '../../infra/slack-manifest.ts';

const SLACK_EVENTS_PATH = slackDescriptor.deployment.webhook.path;

const read = (name: string) => readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8');

test('slack manifest: every request URL is the SlackEventsUrl placeholder, and docs/deploy.md names each field', () => {
  const urls = requestUrls();
  assert.deepEqual(
    urls.map((u) => u.serves),
    ['events', 'interactivity', '/stop', '/steer', '/usage'],
  );
  const readme = read('docs/deploy.md');
  for (const { field, url } of urls) {
    assert.equal(url, `https://REPLACE-WITH-SlackEventsUrl${SLACK_EVENTS_PATH}`, field);
    assert.ok(readme.includes(`\`${field}\``), `docs/deploy.md names ${field}`);
  }
  const raw = readFileSync(SLACK_MANIFEST_FILE, 'utf8');
  assert.equal(raw.split(`https://REPLACE-WITH-SlackEventsUrl${SLACK_EVENTS_PATH}`).length - 1, urls.length, 'no other URL');
});

test("slack manifest: its header and the local stack's banner count and name every request URL", () => {
  const described = describeRequestUrls();
  assert.equal(described, 'five request URLs (events, interactivity, /stop, /steer, /usage)');
  const header = readFileSync(SLACK_MANIFEST_FILE, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) => line.replace(/^#\s?/, ''))
    .join(' ');
  assert.ok(header.includes(described.replace(' (', ' below (')), header);
  // The banner says it from the manifest itself; it never names a count of its own.
  const banner = read('packages/local-cloud/src/start.ts');
  assert.match(banner, /set the manifest's \$\{describeRequestUrls\(\)\}/);
  assert.doesNotMatch(banner, /\b(three|four|five|six) request URLs/);
  // Fewer URLs (a slash command removed) are counted as such.
  const manifest = readSlackManifest();
  manifest.features.slash_commands = manifest.features.slash_commands!.slice(0, 1);
  assert.equal(describeRequestUrls(requestUrls(manifest)), 'three request URLs (events, interactivity, /stop)');
});

test('slack manifest: no scope that needs a feature the manifest does not declare', () => {
  const manifest = readSlackManifest();
  const scopes = manifest.oauth_config.scopes.bot;
  // The thinking status (assistant.threads.setStatus) takes chat:write; the runtime needs it to reply anyway.
  assert.ok(scopes.includes('chat:write'));
  // Slack refuses to create an app whose bot scopes include assistant:write without
  // features.assistant_view (an assistant pane, which this app does not serve).
  assert.ok(
    !scopes.includes('assistant:write') || manifest.features.assistant_view !== undefined,
    'assistant:write needs features.assistant_view',
  );
  assert.ok(!scopes.includes('assistant:write'), 'assistant:write is not needed: setStatus takes chat:write');
});
