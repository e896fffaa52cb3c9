import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStreamRedactor, redactSecrets } from '../../shared/secret-filter.ts';
import { createLogger } from '../../shared/log.ts';

const AWS_ID = 'AKIAIOSFODNN7EXAMPLE';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

test('secrets of each kind are redacted; ordinary text is not', () => {
  const text = [
    `id ${AWS_ID} secret ${AWS_SECRET}`,
    'slack xoxb-1234567890-abcdefghij and xapp-1-A0123-456-abcdef',
    'gh ghp_abcdefghijklmnopqrstuvwxyz0123456789AB',
    'Authorization: Bearer abcdefghijklmnopqrstuvwxyz.0123456789',
    'db postgres://admin:hunter2secret@db.example.com:5432/app',
    '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----',
  ].join('\n');
  const out = redactSecrets(text);
  for (const secret of [
    AWS_ID,
    AWS_SECRET,
    'xoxb-1234567890',
    'xapp-1',
    'ghp_',
    'abcdefghijklmnopqrstuvwxyz.0123456789',
    'hunter2secret',
    'MIIEow',
  ]) {
    assert.ok(!out.includes(secret), `${secret} left in:\n${out}`);
  }
  assert.match(out, /postgres:\/\/admin:\[redacted password\]@db\.example\.com/);
  const plain = 'The deploy finished in 42 s; see https://example.com/runs/12345 and commit 3f9a1c2b.';
  assert.equal(redactSecrets(plain), plain);
});

test('a secret split across stream deltas is still redacted, and the text arrives whole otherwise', () => {
  const redactor = createStreamRedactor();
  const deltas = ['Here it is: AKIAIOSF', 'ODNN7EXAMPLE and the key wJalrXUtnFEMI/K7MD', 'ENG/bPxRfiCYEXAMPLEKEY done.'];
  const out = deltas.map((d) => redactor.push(d)).join('') + redactor.flush();
  assert.equal(out, 'Here it is: [redacted AWS access key id] and the key [redacted AWS secret access key] done.');
});

test('log lines redact secret values under any key, at any depth', () => {
  const lines: string[] = [];
  const logger = createLogger({ write: (line) => lines.push(line) });
  logger.info('tool call', { output: `found ${AWS_SECRET}`, nested: { deeper: [{ note: `id ${AWS_ID}` }] } });
  assert.ok(!lines.join('\n').includes(AWS_SECRET));
  assert.ok(!lines.join('\n').includes(AWS_ID));
  assert.match(lines[0]!, /\[redacted AWS secret access key\]/);
});
