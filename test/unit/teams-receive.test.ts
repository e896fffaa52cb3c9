// The Teams webhook reads activities without the Teams SDK (shared/platforms/teams/receive.ts). Its
// messages must be what the Chat SDK Teams adapter made of the same activities, above all the thread
// ids (stored ids and replies depend on them): checked here against that adapter, on the recorded
// real activities and on one with formatting and every kind of attachment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createTeamsAdapter } from '@chat-adapter/teams';
import { extractTeamsAttachments, type TeamsActivity } from '@chat-adapter/teams/webhook';
import type { Message } from 'chat';
import { teamsMessageOf, threadIdOfActivity } from '../../shared/platforms/teams/receive.ts';

const fixture = (path: string) => JSON.parse(readFileSync(new URL(`../fixtures/chat-sdk-replay/${path}`, import.meta.url), 'utf8'));
const channel = fixture('teams.json');
const dm = fixture('dm/teams.json');
const actions = fixture('actions-reactions/teams.json');
const APP_ID = channel.appId as string;

const formatted: TeamsActivity = {
  ...structuredClone(channel.mention),
  id: '1767225000000',
  timestamp: '2026-01-01T00:10:00.123Z',
  text: '<p><at>Threadwork</at> please <b>check</b> <i>this</i> <a href="https://example.com/x">link</a> &amp; <code>npm test</code></p>',
  attachments: [
    { contentType: 'text/html', content: '<p>the message itself</p>' },
    { contentType: 'application/vnd.microsoft.card.adaptive', content: { type: 'AdaptiveCard' } },
    { contentType: 'image/png', contentUrl: `${channel.serviceUrl}v3/attachments/abc/views/original`, name: 'shot.png' },
    { contentType: 'image/jpeg', contentUrl: 'https://files.example.com/photo.jpg', name: 'photo.jpg' },
    {
      contentType: 'application/vnd.microsoft.teams.file.download.info',
      name: 'Report.PDF',
      content: { downloadUrl: 'https://contoso.sharepoint.com/download?x=1', fileType: 'pdf', uniqueId: 'u1' },
    },
    {
      contentType: 'application/vnd.microsoft.teams.file.download.info',
      name: 'notes.unknownext',
      content: { downloadUrl: 'https://contoso.sharepoint.com/d2' },
    },
  ],
};

const activities: [string, TeamsActivity][] = [
  ['a channel mention', channel.mention],
  ['a channel follow-up', channel.followUp],
  ['a personal chat message', dm.dmMessage],
  ['a group mention', dm.mention],
  ['a mention before a button press', actions.mention],
  ['formatting and attachments', formatted],
];

/** What a later step reads of a message (the rest, such as fetchData closures, is rebuilt from these). */
const seen = (message: Message) => ({
  id: message.id,
  threadId: message.threadId,
  text: message.text,
  formatted: message.formatted,
  author: message.author,
  // Without a timestamp in the activity both say "now", a few ms apart.
  dateSent: (message.raw as { timestamp?: string }).timestamp ? message.metadata.dateSent.toISOString() : 'now',
  attachments: message.attachments.map(({ type, url, name, mimeType, fetchMetadata }) => ({ type, url, name, mimeType, fetchMetadata })),
});

for (const [what, activity] of activities) {
  test(`${what}: the same thread id, text, author and attachments as the Teams adapter`, () => {
    const teams = createTeamsAdapter({ appId: APP_ID, appPassword: 'unused', appType: 'MultiTenant' });
    const expected = teams.parseMessage(activity as never);
    const threadId = threadIdOfActivity(activity);
    const actual = teamsMessageOf(activity, extractTeamsAttachments(activity), APP_ID, threadId);
    assert.deepEqual(seen(actual), seen(expected));
  });
}
