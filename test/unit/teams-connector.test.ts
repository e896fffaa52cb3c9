// The Connector adapter's attachment downloads: the bot's token goes only to the conversation's own
// Bot Connector origin, never to a URL elsewhere that an activity names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsoleLogger, type Attachment } from 'chat';
import { TeamsConnectorAdapter } from '../../shared/teams-connector.ts';

function adapter() {
  const calls: { url: string; authorization: string | null }[] = [];
  const fetchFn = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), authorization: new Headers(init?.headers).get('authorization') });
    return new Response('file bytes');
  }) as typeof fetch;
  const connector = new TeamsConnectorAdapter({
    appId: 'app',
    tokens: async () => 'bot-token',
    logger: new ConsoleLogger('error'),
    fetch: fetchFn,
  });
  return { connector, calls };
}

const botFile = (url: string, connectorOrigin: string): Attachment => ({
  type: 'file',
  name: 'notes.txt',
  url,
  fetchMetadata: { url, auth: 'bot', connectorOrigin },
});

test("a file on the conversation's Connector is fetched with the bot's token", async () => {
  const { connector, calls } = adapter();
  const file = connector.rehydrateAttachment(
    botFile('https://smba.trafficmanager.net/amer/v3/attachments/1/views/original', 'https://smba.trafficmanager.net'),
  );
  assert.equal((await file.fetchData!()).toString(), 'file bytes');
  assert.deepEqual(calls, [
    { url: 'https://smba.trafficmanager.net/amer/v3/attachments/1/views/original', authorization: 'Bearer bot-token' },
  ]);
});

test('a file said to need the bot token but elsewhere than the Connector is refused without a request', async () => {
  const { connector, calls } = adapter();
  const file = connector.rehydrateAttachment(botFile('https://attacker.example/steal', 'https://smba.trafficmanager.net'));
  await assert.rejects(file.fetchData!(), /Refusing to send a bot token to an untrusted attachment URL/);
  assert.deepEqual(calls, []);
});
