// The Teams app package: a zip Teams accepts (manifest.json with the bot id and the scopes the agent
// works in, a 192×192 colour icon and a 32×32 outline icon), read back entry by entry here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32, inflateRawSync, inflateSync } from 'node:zlib';
import { teamsAppPackage, teamsManifest } from '../../infra/teams-app/package.ts';

const APP_ID = '11111111-2222-3333-4444-555555555555';

/** The zip's entries by name, each checked against its CRC-32, via the central directory. */
function unzip(bytes: Buffer): Record<string, Buffer> {
  const end = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(end >= 0, 'end of central directory');
  const count = bytes.readUInt16LE(end + 10);
  let at = bytes.readUInt32LE(end + 16);
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < count; i++) {
    assert.equal(bytes.readUInt32LE(at), 0x02014b50, 'central directory entry');
    const [method, crc, size, nameLength, local] = [
      bytes.readUInt16LE(at + 10),
      bytes.readUInt32LE(at + 16),
      bytes.readUInt32LE(at + 20),
      bytes.readUInt16LE(at + 28),
      bytes.readUInt32LE(at + 42),
    ];
    const name = bytes.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    const dataAt = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    const data = method === 8 ? inflateRawSync(bytes.subarray(dataAt, dataAt + size)) : bytes.subarray(dataAt, dataAt + size);
    assert.equal(crc32(data), crc, `${name} crc`);
    files[name] = data;
    at += 46 + nameLength + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
  }
  return files;
}

function pngSize(png: Buffer): { width: number; height: number; colorType: number } {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(png.subarray(12, 16).toString('ascii'), 'IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20), colorType: png[25]! };
}

test('the package holds the manifest with the bot id and scopes, and icons of the sizes Teams requires', () => {
  const files = unzip(teamsAppPackage({ appId: APP_ID, name: 'Agent' }).zip);
  assert.deepEqual(Object.keys(files).sort(), ['color.png', 'manifest.json', 'outline.png']);
  const manifest = JSON.parse(files['manifest.json']!.toString('utf8'));
  assert.equal(manifest.id, APP_ID);
  assert.equal(manifest.manifestVersion, '1.17');
  assert.deepEqual(manifest.bots, [
    { botId: APP_ID, scopes: ['team', 'groupchat', 'personal'], supportsFiles: false, isNotificationOnly: false },
  ]);
  assert.deepEqual(manifest.icons, { color: 'color.png', outline: 'outline.png' });
  assert.equal(manifest.name.short, 'Agent');
  assert.ok(manifest.description.short.length <= 80 && manifest.name.full.length <= 100);
  assert.deepEqual(pngSize(files['color.png']!), { width: 192, height: 192, colorType: 6 });
  assert.deepEqual(pngSize(files['outline.png']!), { width: 32, height: 32, colorType: 6 });
});

test('the outline icon is white on transparent', () => {
  const png = teamsAppPackage({ appId: APP_ID }).files['outline.png']!;
  const idat = png.indexOf('IDAT');
  const length = png.readUInt32BE(idat - 4);
  const rows = inflateSync(png.subarray(idat + 4, idat + 4 + length));
  const colours = new Set<string>();
  for (let y = 0; y < 32; y++)
    for (let x = 0; x < 32; x++) colours.add([...rows.subarray(y * 129 + 1 + x * 4, y * 129 + 5 + x * 4)].join(','));
  assert.deepEqual([...colours].sort(), ['0,0,0,0', '255,255,255,255']);
});

test('an app id that is not a GUID is refused with what it must be', () => {
  assert.throws(() => teamsManifest({ appId: 'my-bot' }), /TEAMS_APP_ID must be the Azure Bot's Microsoft App ID \(a GUID\)/);
});
