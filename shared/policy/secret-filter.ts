// Secrets out of everything posted and logged: every message the bot posts or edits (the chat's
// adapters pass them all through shared/platforms/redacting-adapter.ts), the thread's log.jsonl and the JSON
// log lines. A match is replaced by `[redacted <kind>]`. The list is meant to grow: add a pattern here
// for a credential format every deployment meets, or in settings.json (`secretPatterns`) for one only
// a deployment knows (its own API keys, internal token formats).
import regjsparser, { type RootNode } from 'regjsparser';

export interface SecretPattern {
  kind: string;
  /** Global regular expression; what it matches is replaced (or only `group` 1 of it, when set: then it also has the `d` flag). */
  pattern: RegExp;
  /** Keep the text around group 1 (a connection string's user and host) and replace the group only. */
  group?: boolean;
  /** A deployment's own pattern: it sees the text in bounded windows (see CUSTOM_WINDOW_CHARS). */
  windowed?: boolean;
}

export const SECRET_PATTERNS: SecretPattern[] = [
  // A block cut off before its end line (a reply stopped at the output limit) goes to the end of the text.
  {
    kind: 'private key',
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  },
  { kind: 'AWS access key id', pattern: /\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b/g },
  // 40 characters of the secret key alphabet, not part of a longer run, with upper, lower and digits.
  {
    kind: 'AWS secret access key',
    pattern:
      /(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
  },
  { kind: 'Slack token', pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}/g },
  { kind: 'Slack app token', pattern: /\bxapp-[A-Za-z0-9-]{10,}/g },
  { kind: 'GitHub token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})/g },
  { kind: 'JSON web token', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { kind: 'bearer token', pattern: /\bBearer\s+[A-Za-z0-9._~+/=-]{20,}/g },
  // scheme://user:password@host: the password goes, the rest stays readable.
  { kind: 'password', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]+)@/dgi, group: true },
];

/** A deployment's own pattern, from settings.json: `{ "name": "Acme API key", "regex": "acme_[A-Za-z0-9]{32}" }`. */
export interface CustomSecretPattern {
  name: string;
  regex: string;
}

/** Longest custom pattern source: a credential format needs far less, and a short pattern is easy to review. */
export const MAX_CUSTOM_PATTERN_CHARS = 200;

/**
 * A custom pattern is run over the text in windows of this many characters, each overlapping the
 * next by CUSTOM_WINDOW_OVERLAP: whatever the pattern, the work per window is bounded, so the work
 * over a text grows in step with its length. A match of up to CUSTOM_WINDOW_OVERLAP + 1 characters
 * always lies whole in some window; a longer one may be redacted in part or not at all.
 */
export const CUSTOM_WINDOW_CHARS = 512;
export const CUSTOM_WINDOW_OVERLAP = 256;

/**
 * The most a backtracking engine may try per starting position of a custom pattern (see `costOf`):
 * three windows' worth. A deployment's patterns run on every post and on the exchange's log, and a
 * reply of 100,000 characters the model was made to write against a pattern must not stall a step:
 * at this limit such a reply costs a pattern about two seconds (measured on a developer machine).
 */
export const MAX_CUSTOM_PATTERN_COST = 3 * CUSTOM_WINDOW_CHARS;

class PatternRefused extends Error {}

type Node = RootNode<{ lookbehind: true; namedGroups: true }>;

const CHARACTER_TYPES = new Set(['value', 'dot', 'characterClass', 'characterClassEscape']);

/** The length of text `node` matches when it always matches the same number of characters in one way; else undefined. */
function fixedLength(node: Node): number | undefined {
  if (CHARACTER_TYPES.has(node.type)) return 1;
  if (node.type === 'anchor') return 0;
  if (node.type === 'alternative' || (node.type === 'group' && (node.behavior === 'normal' || node.behavior === 'ignore'))) {
    let total = 0;
    for (const item of node.body) {
      const length = fixedLength(item);
      if (length === undefined) return undefined;
      total += length;
    }
    return total;
  }
  if (node.type === 'quantifier' && node.min === node.max) {
    const length = fixedLength(node.body[0]);
    return length === undefined ? undefined : length * node.min;
  }
  return undefined;
}

/** Whether the character-like `atom` can match the literal `next` (the same engine decides). */
function canMatch(atom: Node, next: Node): boolean {
  if (next.type !== 'value') return true;
  return new RegExp(`^(?:${atom.raw})$`).test(String.fromCodePoint(next.codePoint));
}

interface Cost {
  /** Steps a backtracking engine may take matching the node, over all the ways it can match. */
  steps: number;
  /** The ways the node can end, each of which the rest of the pattern is tried after. */
  ways: number;
}

/**
 * An upper bound on a backtracking engine's work per starting position. A sequence costs each
 * item's steps times the ways of the items before it; an open-ended repeat counts a window's worth
 * of characters; a repeat directly followed by a character it cannot match ends in one way only.
 */
function costOf(node: Node, next?: Node): Cost {
  switch (node.type) {
    case 'value':
    case 'dot':
    case 'characterClass':
    case 'characterClassEscape':
    case 'anchor':
      return { steps: 1, ways: 1 };
    case 'reference':
      throw new PatternRefused('uses a backreference (\\1, \\k<name>), which this filter does not support');
    case 'disjunction': {
      const branches = node.body.map((branch) => costOf(branch));
      return { steps: sum(branches.map((b) => b.steps)), ways: sum(branches.map((b) => b.ways)) };
    }
    case 'group':
      if (node.behavior === 'lookahead' || node.behavior === 'negativeLookahead')
        throw new PatternRefused('uses a lookahead ((?=…) or (?!…)), which this filter does not support');
      if (node.behavior === 'lookbehind' || node.behavior === 'negativeLookbehind')
        throw new PatternRefused('uses a lookbehind ((?<=…) or (?<!…)), which this filter does not support');
      return sequenceCost(node.body);
    case 'alternative':
      return sequenceCost(node.body);
    case 'quantifier':
      return repeatCost(node, next);
  }
}

function sequenceCost(items: Node[]): Cost {
  // From the end: each item's own steps, then the rest once per way it can end.
  let steps = 0;
  let ways = 1;
  for (let i = items.length - 1; i >= 0; i--) {
    const item = costOf(items[i]!, items[i + 1]);
    steps = item.steps + item.ways * steps;
    ways *= item.ways;
  }
  return { steps, ways };
}

function repeatCost(node: Extract<Node, { type: 'quantifier' }>, next: Node | undefined): Cost {
  const body = node.body[0];
  const max = node.max ?? Infinity;
  const determined = next !== undefined && CHARACTER_TYPES.has(body.type) && !canMatch(body, next);
  if (max <= 1) {
    const inner = costOf(body, next);
    return { steps: inner.steps + 1, ways: determined ? 1 : inner.ways + (node.min === 0 ? 1 : 0) };
  }
  const length = fixedLength(body);
  if (length === undefined) {
    throw new PatternRefused(
      'repeats a group that holds a repeat or alternatives, such as (a+)+, (a|b)+ or (.*a){12}, which can take exponential time; ' +
        'inside a repeated group keep to fixed text, as in (?:[0-9a-f]{4}-){3}',
    );
  }
  const open = max === Infinity;
  // Read up to `max` times, then given back one at a time down to `min`.
  const reads = max * Math.max(length, 1);
  return {
    steps: open ? CUSTOM_WINDOW_CHARS : node.min === max ? reads : 2 * reads,
    ways: determined ? 1 : open ? CUSTOM_WINDOW_CHARS : max - node.min + 1,
  };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Why a custom pattern cannot be used, or undefined when it can. */
export function customPatternProblem(regex: string): string | undefined {
  if (regex.length > MAX_CUSTOM_PATTERN_CHARS) return `is ${regex.length} characters long; the limit is ${MAX_CUSTOM_PATTERN_CHARS}`;
  let compiled: RegExp;
  try {
    compiled = new RegExp(regex, 'g');
  } catch (error) {
    return `is not a valid regular expression: ${(error as Error).message}`;
  }
  if (compiled.test('')) return 'matches the empty string, so it would redact nothing useful and everything around it';
  let tree: Node;
  try {
    tree = regjsparser.parse(regex, '', { lookbehind: true, namedGroups: true });
  } catch (error) {
    return `uses syntax this filter does not accept: ${(error as Error).message}`;
  }
  let cost: Cost;
  try {
    cost = costOf(tree);
  } catch (error) {
    if (error instanceof PatternRefused) return error.message;
    throw error;
  }
  if (cost.steps > MAX_CUSTOM_PATTERN_COST) {
    const steps = Number.isFinite(cost.steps) ? `about ${Math.round(cost.steps).toLocaleString('en-US')}` : 'unboundedly many';
    return (
      `allows too many ways to match the same text (${steps} tries per position; the limit is ${MAX_CUSTOM_PATTERN_COST.toLocaleString('en-US')}), ` +
      'as with an open-ended repeat (*, +, {n,}) followed by more pattern it can overlap (.*x.*, \\w+\\w+) or wide bounded repeats in a row; ' +
      'end a repeat with a character it cannot match, as in [0-9]+-, and bound the others, as in [0-9]{1,20}'
    );
  }
  return undefined;
}

const compiledCustom = new Map<string, SecretPattern[]>();

/** The built-in patterns and a deployment's own (validated when settings.json is read), each compiled once per container. */
export function secretPatternsWith(custom: readonly CustomSecretPattern[] | undefined): SecretPattern[] {
  if (!custom?.length) return SECRET_PATTERNS;
  const key = JSON.stringify(custom);
  let patterns = compiledCustom.get(key);
  if (!patterns) {
    patterns = [...SECRET_PATTERNS, ...custom.map(({ name, regex }) => ({ kind: name, pattern: new RegExp(regex, 'g'), windowed: true }))];
    compiledCustom.set(key, patterns);
  }
  return patterns;
}

type Range = [start: number, end: number];

function addMatches(ranges: Range[], text: string, { pattern, group }: SecretPattern, offset: number): void {
  for (const match of text.matchAll(pattern)) {
    const [start, end] = group ? (match.indices?.[1] ?? [0, 0]) : [match.index, match.index + match[0].length];
    if (end > start) ranges.push([offset + start, offset + end]);
  }
}

/** Where `secret` matches in `text`, overlapping matches merged, in order. */
function secretRanges(text: string, secret: SecretPattern): Range[] {
  const ranges: Range[] = [];
  if (!secret.windowed) addMatches(ranges, text, secret, 0);
  else {
    const stride = CUSTOM_WINDOW_CHARS - CUSTOM_WINDOW_OVERLAP;
    for (let from = 0; ; from += stride) {
      addMatches(ranges, text.slice(from, from + CUSTOM_WINDOW_CHARS), secret, from);
      if (from + CUSTOM_WINDOW_CHARS >= text.length) break;
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: Range[] = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

/**
 * Whether a pattern customPatternProblem accepts matches somewhere in `text`, run as a deployment's
 * secret patterns are (in bounded windows), so the work stays in step with the text's length.
 */
export function matchesBounded(regex: string, text: string): boolean {
  return secretRanges(text, { kind: 'match', pattern: new RegExp(regex, 'g'), windowed: true }).length > 0;
}

/** The text with every secret replaced. */
export function redactSecrets(text: string, patterns: SecretPattern[] = SECRET_PATTERNS): string {
  let out = text;
  for (const secret of patterns) {
    const ranges = secretRanges(out, secret);
    if (ranges.length === 0) continue;
    let redacted = '';
    let at = 0;
    for (const [start, end] of ranges) {
      redacted += `${out.slice(at, start)}[redacted ${secret.kind}]`;
      at = end;
    }
    out = redacted + out.slice(at);
  }
  return out;
}

/** Text held back at most, when no whitespace comes (a secret never spans whitespace, a key block aside). */
const MAX_HELD_CHARS = 8192;
/** When the hold limit forces a cut, this much of the end is still held: a secret may be arriving there. */
const HELD_TAIL_CHARS = 256;

/** `cut`, moved back to the start of any secret lying across it, so that no secret is let through in part. */
function cutBeforeSecrets(text: string, cut: number, patterns: SecretPattern[]): number {
  for (let moved = true; moved && cut > 0;) {
    moved = false;
    for (const secret of patterns) {
      const across = secretRanges(text, secret).find(([start, end]) => start < cut && cut < end);
      if (across) {
        cut = across[0];
        moved = true;
      }
    }
  }
  return cut;
}

/**
 * Redaction for a stream of text deltas: a secret split across deltas is still caught. Text is let
 * through up to the last whitespace (secrets are single words), and a private key block is held
 * until its end line; past MAX_HELD_CHARS without whitespace, all but the last HELD_TAIL_CHARS go,
 * cut before any secret lying across the cut. `flush` lets the rest through.
 */
export function createStreamRedactor(patterns: SecretPattern[] = SECRET_PATTERNS) {
  let held = '';
  return {
    push(delta: string): string {
      held += delta;
      // A key block, or a header still arriving (its words are split at spaces like any text).
      const keyStart = held.search(/-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY-----|-{0,4}$)/);
      const openKey = keyStart >= 0 && !/-----END [A-Z0-9 ]*PRIVATE KEY-----/.test(held.slice(keyStart));
      let cut = openKey ? keyStart : Math.max(held.lastIndexOf(' '), held.lastIndexOf('\n'), held.lastIndexOf('\t')) + 1;
      if (held.length - cut > MAX_HELD_CHARS && !openKey) {
        cut = cutBeforeSecrets(held, held.length - HELD_TAIL_CHARS, patterns);
        // A single secret-like run of twice the limit (no real credential is that long) goes whole.
        if (cut === 0 && held.length > 2 * MAX_HELD_CHARS) cut = held.length;
      }
      if (cut <= 0) return '';
      const out = redactSecrets(held.slice(0, cut), patterns);
      held = held.slice(cut);
      return out;
    },
    flush(): string {
      const out = redactSecrets(held, patterns);
      held = '';
      return out;
    },
  };
}
