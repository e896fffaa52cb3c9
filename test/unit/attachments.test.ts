// Saving attachments and showing images to the model, against real S3 (fauxqs). The download itself
// is the chat adapter's (platform auth, SSRF guard): here a stand-in `rehydrate` gives each
// attachment a fetchData returning its bytes, as the Slack adapter's does for a files.slack.com URL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Attachment } from 'chat';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { attachmentBlocks, materializeImages, MAX_IMAGE_BYTES, saveAttachments } from '../../shared/platforms/attachments.ts';
import type { RunInput } from '../../shared/contracts.ts';

let emulator: Emulator;
let s3: S3Client;
const bucket = 'attachments-test';
before(async () => {
  emulator = await startSqsAndS3();
  s3 = new S3Client({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    forcePathStyle: true,
  });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
after(async () => {
  s3.destroy();
  await emulator.stop();
});

const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

function run(attachments: Partial<Attachment>[]): RunInput {
  return {
    runId: 'run-attach',
    threadId: 'slack:C1:1700000000.000100',
    prompt: {
      threadId: 'slack:C1:1700000000.000100',
      messageId: '1700000000.000100',
      text: 'look',
      author: { userId: 'U1', userName: 'alice' },
      postedAt: '2026-11-22T10:20:30.456Z',
      thread: {
        _type: 'chat:Thread',
        id: 'slack:C1:1700000000.000100',
        adapterName: 'slack',
        channelId: 'slack:C1',
        isDM: false,
        currentMessage: { attachments },
      },
    },
  };
}

const bytesByUrl: Record<string, Buffer> = {
  'https://files.slack.com/a/pixel.png': png,
  'https://files.slack.com/a/notes v2.txt': Buffer.from('hello'),
};
const rehydrate = (a: Attachment): Attachment => (a.url && bytesByUrl[a.url] ? { ...a, fetchData: async () => bytesByUrl[a.url!]! } : a);

test('attachments are stored as {timestamp}_{filename} and images become image blocks read at request time', async () => {
  const store = { s3, bucket };
  const { saved, notes } = await saveAttachments(
    { store, rehydrate },
    run([
      { type: 'image', url: 'https://files.slack.com/a/pixel.png', name: 'pixel.png', mimeType: 'image/png', size: png.length },
      { type: 'file', url: 'https://files.slack.com/a/notes v2.txt', name: 'notes v2.txt', mimeType: 'text/plain', size: 5 },
      { type: 'file', name: 'gone.pdf', mimeType: 'application/pdf' },
    ]),
  );
  assert.deepEqual(
    saved.map((a) => a.key),
    [
      'slack/C1/1700000000.000100/attachments/20261122102030456_pixel.png',
      'slack/C1/1700000000.000100/attachments/20261122102030456_notes_v2.txt',
    ],
  );
  assert.deepEqual(notes, ['gone.pdf could not be downloaded (no download link)']);
  const stored = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: saved[0]!.key }));
  assert.deepEqual(Buffer.from(await stored.Body!.transformToByteArray()), png);
  const blocks = attachmentBlocks(store, saved, notes);
  assert.match(
    blocks[0]!.text!,
    /pixel\.png: \/workspace\/data\/slack\/C1\/1700000000\.000100\/attachments\/20261122102030456_pixel\.png \(image\/png, 70 bytes\)/,
  );
  assert.match(blocks[0]!.text!, /gone\.pdf could not be downloaded/);
  assert.equal(blocks.filter((b) => b.image).length, 1, 'only the image is an image block');
  const [message] = await materializeImages(store, [{ role: 'user', content: blocks }]);
  const image = message!.content!.find((b) => b.image)!.image!;
  assert.equal(image.format, 'png');
  assert.deepEqual(Buffer.from((image.source as { bytes: Uint8Array }).bytes), png);
});

test('an image over the model limit is not sent, and the agent is told where it is', () => {
  const blocks = attachmentBlocks(
    { s3, bucket },
    [{ original: 'huge.png', local: '/workspace/data/x/huge.png', key: 'x/huge.png', mimeType: 'image/png', size: MAX_IMAGE_BYTES + 1 }],
    [],
  );
  assert.equal(blocks.filter((b) => b.image).length, 0);
  assert.match(
    blocks.map((b) => b.text).join('\n'),
    /over the model's 3750000-byte image limit: not shown to you, but it is at \/workspace\/data\/x\/huge\.png/,
  );
});
