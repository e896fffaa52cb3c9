// Secrets out of everything posted and logged: replies as they stream into the chat, the thread's
// log.jsonl and the JSON log lines. A match is replaced by `[redacted <kind>]`. The list is meant to
// grow: add a pattern for any credential format the deployment handles.

export interface SecretPattern {
  kind: string;
  /** Global regular expression; what it matches is replaced (or only `group` 1 of it, when set). */
  pattern: RegExp;
  /** Keep the text around group 1 (a connection string's user and host) and replace the group only. */
  group?: boolean;
}

export const SECRET_PATTERNS: SecretPattern[] = [
  { kind: 'private key', pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----/g },
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
  { kind: 'password', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]+)@/gi, group: true },
];

/** The text with every secret replaced. */
export function redactSecrets(text: string, patterns: SecretPattern[] = SECRET_PATTERNS): string {
  let out = text;
  for (const { kind, pattern, group } of patterns) {
    out = out.replace(pattern, (match: string, secret: unknown) =>
      group && typeof secret === 'string' ? match.replace(secret, `[redacted ${kind}]`) : `[redacted ${kind}]`,
    );
  }
  return out;
}

/** Text held back at most, when no whitespace comes (a secret never spans whitespace, a key block aside). */
const MAX_HELD_CHARS = 8192;

/**
 * Redaction for a stream of text deltas: a secret split across deltas is still caught. Text is let
 * through up to the last whitespace (secrets are single words), and a private key block is held
 * until its end line; `flush` lets the rest through.
 */
export function createStreamRedactor(patterns: SecretPattern[] = SECRET_PATTERNS) {
  let held = '';
  return {
    push(delta: string): string {
      held += delta;
      const keyStart = held.search(/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/);
      const openKey = keyStart >= 0 && !/-----END [A-Z0-9 ]*PRIVATE KEY-----/.test(held.slice(keyStart));
      let cut = openKey ? keyStart : Math.max(held.lastIndexOf(' '), held.lastIndexOf('\n'), held.lastIndexOf('\t')) + 1;
      if (held.length - cut > MAX_HELD_CHARS && !openKey) cut = held.length;
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
