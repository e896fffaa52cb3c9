// The local IAM keeps one collator per (locales, options) for localeCompare: every comparison must
// answer as a fresh collator with the same locales and options does, whichever pairs came before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keepCollators } from '../src/iam/collation.ts';

const PAIRS: [string, string][] = [
  ['a', 'A'],
  ['a', 'á'],
  ['arn:aws:s3:::b/K', 'arn:aws:s3:::b/k'],
  ['résumé', 'resume'],
  ['item2', 'item10'],
  ['', 'x'],
  ['same', 'same'],
];
const OPTIONS: (Intl.CollatorOptions | undefined)[] = [
  undefined,
  { sensitivity: 'accent' },
  { sensitivity: 'base' },
  { sensitivity: 'case' },
  { sensitivity: 'variant' },
  { numeric: true },
  { sensitivity: 'base', ignorePunctuation: true },
];

test('localeCompare answers as a fresh collator, for each sensitivity and option, in any order', () => {
  keepCollators();
  for (const round of [1, 2]) {
    for (const locales of [undefined, 'en', 'sv']) {
      for (const options of round === 1 ? OPTIONS : [...OPTIONS].reverse()) {
        for (const [a, b] of PAIRS) {
          const expected = new Intl.Collator(locales, options).compare(a, b);
          assert.equal(
            Math.sign(a.localeCompare(b, locales, options)),
            Math.sign(expected),
            `${a} vs ${b}, ${locales}, ${JSON.stringify(options)}`,
          );
        }
      }
    }
  }
  // What the IAM libraries rely on: case-insensitive, accent-sensitive equality.
  assert.equal('Bucket'.localeCompare('bucket', undefined, { sensitivity: 'accent' }), 0);
  assert.notEqual('bucket'.localeCompare('bücket', undefined, { sensitivity: 'accent' }), 0);
  assert.notEqual('Bucket'.localeCompare('bucket', undefined, { sensitivity: 'variant' }), 0);
});
