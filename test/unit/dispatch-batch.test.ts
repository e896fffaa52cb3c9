// An inbox batch through admission (shared/admission/batch.ts) over plain in-memory fakes: which
// records run at the same time, which wait, and which are reported for redelivery. (The handler on
// DynamoDB Local and a Step Functions stand-in is test/unit/dispatch.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { admitBatch, inGroupOrder } from '../../shared/admission/batch.ts';
import type { Prompt } from '../../shared/contracts.ts';
import { settingsSchema } from '../../shared/settings/schema.ts';
import { fakes } from '../support/admission-fakes.ts';
import { promptFor } from '../support/prompts.ts';

const A = 'slack:C1:1.0001';
const B = 'slack:C1:2.0001';

/** An inbox record of `threadId`'s prompt `messageId`, in the thread's message group. */
function record(threadId: string, messageId: string): SQSRecord {
  return {
    messageId,
    receiptHandle: messageId,
    body: JSON.stringify({ ...promptFor(threadId, messageId), text: messageId }),
    attributes: { MessageGroupId: threadId } as SQSRecord['attributes'],
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:inbox.fifo',
    awsRegion: 'us-east-1',
  };
}

const batchOf = (...records: SQSRecord[]): SQSEvent => ({ Records: records });
/** The records reported for redelivery (in the order they ended, which is no order across threads). */
const failed = (response: { batchItemFailures: { itemIdentifier: string }[] }) =>
  response.batchItemFailures.map((f) => f.itemIdentifier).sort();

/** A promise settled from outside. */
const gate = () => Promise.withResolvers<void>();

/** Fails the test instead of hanging it when what a test waits for never comes. */
async function orFail(promise: Promise<void>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`never happened: ${what}`)), 10_000);
  });
  try {
    await Promise.race([promise, never]);
  } finally {
    clearTimeout(timer);
  }
}

test("dispatch batch: different threads' records are admitted at the same time", async () => {
  const started = new Set<string>();
  const admitted: string[] = [];
  const bothStarted = gate();
  const f = fakes(settingsSchema.parse({}), {
    // Each thread's admission holds until the other thread's has begun: one after another, neither would end.
    onAdmit: async (prompt: Prompt) => {
      admitted.push(prompt.messageId);
      started.add(prompt.threadId);
      if (started.size === 2) bothStarted.resolve();
      await orFail(bothStarted.promise, `both threads admitted at once (only ${[...started].join()} began)`);
    },
  });
  const response = await admitBatch(batchOf(record(A, 'a1'), record(B, 'b1')), f.deps);
  assert.deepEqual(failed(response), []);
  assert.deepEqual(admitted.sort(), ['a1', 'b1']);
});

test("dispatch batch: one thread's records are admitted one after another, in arrival order, while other threads go on", async () => {
  const events: string[] = [];
  const releaseA1 = gate();
  const b1Done = gate();
  const f = fakes(settingsSchema.parse({}), {
    onAdmit: async (prompt: Prompt) => {
      events.push(`start ${prompt.messageId}`);
      // a1 is held until b1, behind it in the batch, has been admitted: a2 must still wait for a1.
      if (prompt.messageId === 'a1') await orFail(releaseA1.promise, 'a1 released');
      if (prompt.messageId === 'b1') {
        b1Done.resolve();
        releaseA1.resolve();
      }
      events.push(`end ${prompt.messageId}`);
    },
  });
  const response = await admitBatch(batchOf(record(A, 'a1'), record(A, 'a2'), record(B, 'b1'), record(A, 'a3')), f.deps);
  await b1Done.promise;
  assert.deepEqual(failed(response), []);
  const ofA = events.filter((e) => e.endsWith('a1') || e.endsWith('a2') || e.endsWith('a3'));
  assert.deepEqual(ofA, ['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
  assert.ok(events.indexOf('end b1') < events.indexOf('end a1'), 'b1 did not wait for the held a1');
  assert.equal(f.settingsReads, 1, 'settings.json read once for the batch');
});

test("dispatch batch: a failed record fails the rest of its thread's records, untried; other threads' records succeed", async () => {
  const admitted: string[] = [];
  const f = fakes(settingsSchema.parse({}), {
    onAdmit: async (prompt: Prompt) => {
      admitted.push(prompt.messageId);
      if (prompt.messageId === 'a2') throw new Error('DynamoDB is throttling');
    },
  });
  const response = await admitBatch(
    batchOf(record(A, 'a1'), record(B, 'b1'), record(A, 'a2'), record(B, 'b2'), record(A, 'a3'), record(A, 'a4')),
    f.deps,
  );
  assert.deepEqual(failed(response), ['a2', 'a3', 'a4'], 'redelivered from the failed record on, in its group only');
  assert.deepEqual(admitted.sort(), ['a1', 'a2', 'b1', 'b2'], 'a3 and a4 were never tried');
  assert.ok(f.logs.some((l) => l.message === 'admission failed; will retry'));
});

test('dispatch batch: a malformed record is dropped (not retried) and holds nothing up; a batch that failed whole is reported, not thrown', async () => {
  const f = fakes(settingsSchema.parse({}), {
    onAdmit: async () => {
      throw new Error('the table is gone');
    },
  });
  const malformed = { ...record(A, 'a0'), body: '{"not": "a prompt"' };
  assert.deepEqual(failed(await admitBatch(batchOf(malformed, record(A, 'a1'), record(B, 'b1')), f.deps)), ['a1', 'b1']);
  assert.deepEqual(failed(await admitBatch(batchOf(record(A, 'a2')), f.deps)), ['a2']);
});

test('in group order: the chain follows the batch, whatever order the records are handed over in', async () => {
  const records = [record(A, 'a1'), record(A, 'a2'), record(B, 'b1')];
  const handled: string[] = [];
  const handle = inGroupOrder(records, async (r) => void handled.push(r.messageId));
  await Promise.all([handle(records[1]!), handle(records[2]!), handle(records[0]!)]);
  assert.deepEqual(
    handled.filter((id) => id.startsWith('a')),
    ['a1', 'a2'],
  );
  await assert.rejects(handle(record(B, 'b9')), /not in the batch/);
});
