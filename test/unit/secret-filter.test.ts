import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStreamRedactor, redactSecrets, SECRET_PATTERNS, secretPatternsWith } from '../../shared/secret-filter.ts';
import { settingsSchema } from '../../shared/schemas.ts';
import { issueLines } from '../../shared/validation.ts';
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

test("settings.json secretPatterns: a deployment's own pattern joins the built-in ones, compiled once", () => {
  const settings = settingsSchema.parse({ secretPatterns: [{ name: 'Acme API key', regex: 'acme_[A-Za-z0-9]{24}' }] });
  const patterns = secretPatternsWith(settings.secretPatterns);
  assert.equal(patterns.length, SECRET_PATTERNS.length + 1);
  assert.equal(secretPatternsWith([...settings.secretPatterns]), patterns, 'the same list compiles once');
  assert.equal(secretPatternsWith([]), SECRET_PATTERNS);
  const redactor = createStreamRedactor(patterns);
  const out = ['key acme_Q2xhdWRl', 'V2FzSGVyZTEyMzQ1 and ', AWS_ID, ' end'].map((d) => redactor.push(d)).join('') + redactor.flush();
  assert.equal(out, 'key [redacted Acme API key] and [redacted AWS access key id] end');
});

test('an unusable secret pattern is refused when settings.json is read, naming the entry and why', () => {
  const problems = (regex: string) => {
    const parsed = settingsSchema.safeParse({ secretPatterns: [{ name: 'mine', regex }] });
    return parsed.success ? [] : issueLines(parsed.error.issues);
  };
  assert.match(problems('(unclosed').join(), /secretPatterns\.0\.regex: the pattern is not a valid regular expression/);
  assert.match(
    problems('(a+)+b').join(),
    /secretPatterns\.0\.regex: the pattern has a repeated group that contains a repeat.*exponential time/,
  );
  assert.match(problems('(\\w*x)*y').join(), /exponential time/);
  assert.match(problems('x*').join(), /matches the empty string/);
  assert.match(problems(`k${'[a-z]'.repeat(50)}`).join(), /is 251 characters long; the limit is 200/);
  assert.deepEqual(problems('tok_(?:live|test)_[0-9a-f]{24}'), []);
  assert.equal(
    settingsSchema.safeParse({ secretPatterns: [{ name: 'x', regex: 'y', flags: 'i' }] }).success,
    false,
    'unknown fields are refused',
  );
});
