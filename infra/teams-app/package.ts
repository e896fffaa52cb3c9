// `npm run teams:package`: the Teams app package to sideload or upload in the Teams admin center: a
// zip of manifest.json (the bot's app id, the scopes the agent works in, the icons) and two icons.
//
//   TEAMS_APP_ID=<Azure Bot's Microsoft App ID> npm run teams:package [-- --out dist/teams-app.zip]
//
// Optional: TEAMS_APP_NAME (default Threadwork), TEAMS_APP_DEVELOPER, TEAMS_APP_WEBSITE_URL,
// TEAMS_APP_PRIVACY_URL, TEAMS_APP_TERMS_URL, TEAMS_APP_VERSION (default 1.0.0).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseCommandLine } from '../../shared/support/cli-args.ts';
import { colorIcon, outlineIcon } from './png.ts';
import { zip } from './zip.ts';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface TeamsAppOptions {
  appId: string;
  name?: string;
  version?: string;
  developer?: string;
  websiteUrl?: string;
  privacyUrl?: string;
  termsUrl?: string;
}

export function teamsManifest(options: TeamsAppOptions): Record<string, unknown> {
  if (!GUID.test(options.appId)) {
    throw new Error(`TEAMS_APP_ID must be the Azure Bot's Microsoft App ID (a GUID), got ${JSON.stringify(options.appId)}`);
  }
  const name = options.name ?? 'Threadwork';
  const website = options.websiteUrl ?? 'https://github.com/';
  return {
    $schema: 'https://developer.microsoft.com/en-us/json-schemas/teams/v1.17/MicrosoftTeams.schema.json',
    manifestVersion: '1.17',
    version: options.version ?? '1.0.0',
    id: options.appId,
    developer: {
      name: options.developer ?? name,
      websiteUrl: website,
      privacyUrl: options.privacyUrl ?? website,
      termsOfUseUrl: options.termsUrl ?? website,
    },
    name: { short: name.slice(0, 30), full: `${name}: an AI agent in your threads`.slice(0, 100) },
    description: {
      short: 'An AI agent that works in your threads, runs tools, and answers.'.slice(0, 80),
      full: `Mention ${name} in a channel or group chat, or message it directly: each thread is one conversation with the agent. Say "stop" to stop it, or "steer ..." to change course while it works.`,
    },
    icons: { color: 'color.png', outline: 'outline.png' },
    accentColor: '#4F6BED',
    // The scopes the agent works in: channel threads, group chats and personal chats.
    bots: [{ botId: options.appId, scopes: ['team', 'groupchat', 'personal'], supportsFiles: false, isNotificationOnly: false }],
    permissions: ['identity', 'messageTeamMembers'],
    validDomains: [],
  };
}

export function teamsAppPackage(options: TeamsAppOptions): { files: Record<string, Buffer>; zip: Buffer } {
  const files = {
    'manifest.json': Buffer.from(`${JSON.stringify(teamsManifest(options), null, 2)}\n`),
    'color.png': colorIcon([0x4f, 0x6b, 0xed, 255]),
    'outline.png': outlineIcon(),
  };
  return { files, zip: zip(files) };
}

const USAGE = `usage: TEAMS_APP_ID=<guid> npm run teams:package [-- --out FILE]
Writes the Teams app package (manifest and icons) for the Azure Bot with that Microsoft App ID.
  --out FILE   where (default dist/teams-app.zip)
Optional: TEAMS_APP_NAME, TEAMS_APP_VERSION, TEAMS_APP_DEVELOPER, TEAMS_APP_WEBSITE_URL,
TEAMS_APP_PRIVACY_URL, TEAMS_APP_TERMS_URL (README, "Teams").`;

function main(): void {
  const { values } = parseCommandLine('teams:package', USAGE, { options: { out: { type: 'string', default: 'dist/teams-app.zip' } } });
  const env = process.env;
  if (!env.TEAMS_APP_ID) {
    console.error("Set TEAMS_APP_ID to the Azure Bot's Microsoft App ID: TEAMS_APP_ID=<guid> npm run teams:package");
    process.exit(2);
  }
  const { zip: bytes } = teamsAppPackage({
    appId: env.TEAMS_APP_ID,
    name: env.TEAMS_APP_NAME,
    version: env.TEAMS_APP_VERSION,
    developer: env.TEAMS_APP_DEVELOPER,
    websiteUrl: env.TEAMS_APP_WEBSITE_URL,
    privacyUrl: env.TEAMS_APP_PRIVACY_URL,
    termsUrl: env.TEAMS_APP_TERMS_URL,
  });
  const out = resolve(values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, bytes);
  console.log(
    `Wrote ${out} (${bytes.length} bytes): upload it in Teams (Apps > Manage your apps > Upload an app) or the Teams admin center.`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
