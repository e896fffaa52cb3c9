// The run ledger on DynamoDB Local: postOnce posts once per record however often its step is
// retried, and a post that failed leaves no record, so the retry posts; claimRecord keeps the first
// writer's value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { claimRecord, postedMessage, postOnce, type PostedMessage } from '../../shared/run/ledger.ts';
import { tableForFile } from '../support/dynamo.ts';

const table = tableForFile();
const NOW = Date.parse('2026-11-24T10:00:00Z');
const ledger = () => ({ ...table(), now: () => NOW });

/** A chat thread that numbers its posts, and can be told to fail the next one. */
function fakeThread() {
  const posts: string[] = [];
  return {
    posts,
    failNext: false,
    async post(text: string) {
      if (this.failNext) {
        this.failNext = false;
        throw new Error('chat API unavailable');
      }
      posts.push(text);
      return { id: `m${posts.length}` };
    },
  };
}

test('postOnce: a retried step finds the record and gets the message back without posting again', async () => {
  const thread = fakeThread();
  const post = () => thread.post('the error message').then(postedMessage);
  assert.deepEqual(await postOnce(ledger(), 'run-once', 'error-reply', post), { messageId: 'm1' });
  assert.deepEqual(await postOnce(ledger(), 'run-once', 'error-reply', post), { messageId: 'm1' });
  assert.deepEqual(thread.posts, ['the error message']);
  // Another record of the same run, or the same record of another run, posts.
  await postOnce(ledger(), 'run-once', 'cost-footer', () => thread.post('cost').then(postedMessage));
  await postOnce(ledger(), 'run-other', 'error-reply', post);
  assert.deepEqual(thread.posts, ['the error message', 'cost', 'the error message']);
  // Stored where deployments keep it: the run's partition, the record's name, 30 days.
  const out = await table().db.send(new GetCommand({ TableName: table().tableName, Key: { pk: 'run#run-once', sk: 'error-reply' } }));
  assert.deepEqual(out.Item, {
    pk: 'run#run-once',
    sk: 'error-reply',
    value: { messageId: 'm1' },
    expiresAt: NOW / 1000 + 30 * 86_400,
  });
});

test('postOnce: a post that failed records nothing, so the retry posts', async () => {
  const thread = fakeThread();
  thread.failNext = true;
  const post = () => thread.post('the cost').then(postedMessage);
  await assert.rejects(postOnce(ledger(), 'run-failed-post', 'cost-footer', post), /chat API unavailable/);
  assert.deepEqual(await postOnce<PostedMessage>(ledger(), 'run-failed-post', 'cost-footer', post), { messageId: 'm1' });
  assert.deepEqual(thread.posts, ['the cost']);
});

test('claimRecord: the first writer of a record wins; later ones get its value back', async () => {
  assert.equal(await claimRecord(ledger(), 'events', 'periodic-notice#a#1', 'first'), 'first');
  assert.equal(await claimRecord(ledger(), 'events', 'periodic-notice#a#1', 'second'), 'first');
});
