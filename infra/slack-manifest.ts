// The Slack app manifest's request URLs, where each is set and what it serves: docs/deploy.md's Slack setup
// steps, the manifest's own header and the local stack's banner name them all, and a test holds
// them to the manifest.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const SLACK_MANIFEST_FILE = new URL('../slack-app-manifest.yaml', import.meta.url);

export interface SlackManifest {
  features: { slash_commands?: { command: string; url: string }[]; assistant_view?: unknown };
  oauth_config: { scopes: { bot: string[] } };
  settings: { event_subscriptions: { request_url: string }; interactivity: { request_url: string } };
}

export interface RequestUrl {
  /** The manifest field, e.g. `features.slash_commands[0].url`. */
  field: string;
  /** What Slack sends there, in a word: `events`, `interactivity`, `/stop`. */
  serves: string;
  url: string;
}

export function readSlackManifest(text = readFileSync(SLACK_MANIFEST_FILE, 'utf8')): SlackManifest {
  return parse(text) as SlackManifest;
}

export function requestUrls(manifest: SlackManifest = readSlackManifest()): RequestUrl[] {
  return [
    { field: 'settings.event_subscriptions.request_url', serves: 'events', url: manifest.settings.event_subscriptions.request_url },
    { field: 'settings.interactivity.request_url', serves: 'interactivity', url: manifest.settings.interactivity.request_url },
    ...(manifest.features.slash_commands ?? []).map((c, i) => ({
      field: `features.slash_commands[${i}].url`,
      serves: c.command,
      url: c.url,
    })),
  ];
}

const NUMBER_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

/** `five request URLs (events, interactivity, /stop, /steer, /usage)`. */
export function describeRequestUrls(urls: RequestUrl[] = requestUrls()): string {
  const count = NUMBER_WORDS[urls.length] ?? String(urls.length);
  return `${count} request URLs (${urls.map((u) => u.serves).join(', ')})`;
}
