import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStreamRedactor, redactSecrets, SECRET_PATTERNS, secretPatternsWith } from '../../shared/policy/secret-filter.ts';
import { settingsSchema } from '../../shared/settings/schema.ts';
import { issueLines } from '../../shared/support/validation.ts';
import { createLogger } from '../../shared/observability/log.ts';

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
  assert.match(problems('(unclosed').join(), /secretPatterns\.0\.regex: "mine" \(\/\(unclosed\/\) is not a valid regular expression/);
  assert.match(
    problems('(a+)+b').join(),
    /secretPatterns\.0\.regex: "mine" \(\/\(a\+\)\+b\/\) repeats a group that holds a repeat.*exponential time/,
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

const GH_TOKEN = 'ghp_Q2xhdWRlV2FzSGVyZUFuZFNhaWRIZWxsbzEy';

test('a streamed reply of over 8,192 characters without whitespace still holds back its end: a token split there is redacted', () => {
  const redactor = createStreamRedactor();
  const deltas = [`${'='.repeat(9000)}${GH_TOKEN.slice(0, 10)}`, `${GH_TOKEN.slice(10)} done.`];
  const out = deltas.map((d) => redactor.push(d)).join('') + redactor.flush();
  assert.equal(out, `${'='.repeat(9000)}[redacted GitHub token] done.`);
});

test('where the hold limit forces a cut, a secret lying across the cut is not cut in two', () => {
  for (let before = 8930; before <= 8960; before += 5) {
    const redactor = createStreamRedactor();
    const text = `${'='.repeat(before)}${GH_TOKEN}${'='.repeat(260)}`;
    const emitted = redactor.push(text);
    assert.ok(emitted.length > 0, 'text past the limit was let through');
    const out = emitted + redactor.flush();
    assert.equal(out, `${'='.repeat(before)}[redacted GitHub token]${'='.repeat(260)}`, `token at ${before}`);
  }
});

test('a private key cut off before its end line is redacted to the end of the text', () => {
  const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ';
  assert.equal(redactSecrets(`Here it is:\n${key}`), 'Here it is:\n[redacted private key]');
  const redactor = createStreamRedactor();
  const out = [`Here it is:\n${key.slice(0, 30)}`, key.slice(30)].map((d) => redactor.push(d)).join('') + redactor.flush();
  assert.equal(out, 'Here it is:\n[redacted private key]');
});

test('patterns that backtrack catastrophically are refused when settings.json is read, naming the pattern', () => {
  const problems = (regex: string) => {
    const parsed = settingsSchema.safeParse({ secretPatterns: [{ name: 'Slow one', regex }] });
    return parsed.success ? [] : issueLines(parsed.error.issues);
  };
  for (const regex of ['(a|a)+b', '(.*a){12}!', '(?:ab|cd)*e', '(x+x+)+y', '([a-z]?)+q']) {
    const [line] = problems(regex);
    assert.ok(line, `${regex} was accepted`);
    assert.ok(line.includes('"Slow one"') && line.includes(regex), `the problem names the pattern: ${line}`);
    assert.match(line, /repeats a group that/);
  }
  for (const regex of ['\\w*\\w*\\w*!', '.*secret.*', '[a-z]{1,64}[a-z]{1,64}!', '[a-z]{1,8}[a-z]{1,8}[a-z]+!']) {
    assert.match(problems(regex).join(), /allows too many ways to match the same text/, regex);
  }
  assert.match(problems('(?<=x)acme').join(), /lookbehind/);
  assert.match(problems('(?=x)acme').join(), /lookahead/);
  assert.match(problems('(a)\\1').join(), /backreference/);
  for (const fine of [
    'acme_(?:live|test)_[A-Za-z0-9]{24}',
    'sk-[A-Za-z0-9]{20,}',
    'AIza[0-9A-Za-z_-]{35}',
    '[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}',
    '(?:[a-f0-9]{4}-){3}[a-f0-9]{4}',
    'tok_[A-Za-z0-9+/]{16}(?:[A-Za-z0-9+/]{4})+',
    'sk_live_[0-9a-zA-Z]{24,99}',
    'https?://[^\\s:@]+:[^\\s@]+@',
  ]) {
    assert.deepEqual(problems(fine), [], fine);
  }
});

test('a custom pattern sees the text in bounded windows: matches across a window edge are found, one longer than a window is not', () => {
  const patterns = secretPatternsWith([{ name: 'Acme API key', regex: 'acme_[A-Za-z0-9]{24}' }]);
  const key = 'acme_Q2xhdWRlV2FzSGVyZTEyMzQ1';
  for (let at = 0; at < 1600; at += 37) {
    const text = `${'x'.repeat(at)} ${key} ${'y'.repeat(200)}`;
    assert.equal(redactSecrets(text, patterns), `${'x'.repeat(at)} [redacted Acme API key] ${'y'.repeat(200)}`, `key at ${at}`);
  }
  const long = secretPatternsWith([{ name: 'Block', regex: 'BEGIN[a-z]{2000}END' }]);
  const block = `BEGIN${'q'.repeat(2000)}END`;
  assert.equal(redactSecrets(block, long), block, 'a match longer than a window is out of reach');
});

test("a sandbox path with an AWS secret key's alphabet and length is not a secret; a key is, even beside a path", () => {
  // "/workspace/data/slack/C0LOCAL/1795766777" is 40 characters of the key alphabet, with upper, lower and digits.
  const path = 'Saved to /workspace/data/slack/C0LOCAL/1795766777.457600/scratch/notes.txt';
  assert.equal(redactSecrets(path), path);
  assert.equal(
    redactSecrets('key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in /workspace/data/x'),
    'key [redacted AWS secret access key] in /workspace/data/x',
  );
});
