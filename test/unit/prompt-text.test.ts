// What the model reads of a chat message: plain text, except that a code block keeps its fences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markdownToPlainText, parseMarkdown } from 'chat';
import { promptTextOf } from '../../shared/admission/ingress.ts';

const message = (markdown: string) => ({ text: markdownToPlainText(markdown), formatted: parseMarkdown(markdown) });

test('a message with a code block reaches the model as Markdown, fences and language kept', () => {
  const text = promptTextOf(message('run this:\n\n```sh\necho hi\n```'));
  assert.equal(text, 'run this:\n\n```sh\necho hi\n```');
});

test('any other message keeps its plain text, nothing escaped', () => {
  assert.equal(promptTextOf(message('what is 2*3 and a_b?')), 'what is 2*3 and a_b?');
  assert.equal(promptTextOf(message('use `ls -la` here')), 'use ls -la here');
});
