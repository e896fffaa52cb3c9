// Text from files, chat platforms and the model, shown to operators. In a terminal (the ops CLI) a
// control character can clear the screen, move the cursor or forge a line; in a chat message,
// markup can close a code block, mention everyone or add a link. Each helper makes such text inert
// and keeps it visible, so an operator sees that a name holds something odd.

/**
 * C0 and C1 controls (ESC starts every terminal escape sequence; CR and LF forge lines), DEL, and
 * the invisible characters that reorder or break a line (bidirectional overrides and isolates, the
 * Unicode line and paragraph separators).
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (code: number, width: number) => code.toString(16).padStart(width, '0');
const escapeControl = (c: string) => {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
};

/** For a terminal: every control character as `\xNN` (or `\uNNNN`), so none acts. */
export function forTerminal(text: string): string {
  return text.replace(CONTROL, escapeControl);
}

/** What Slack's and Teams' markup give meaning to, and what each becomes. */
const MARKUP: Record<string, string> = {
  // Slack's own escapes: `<…>` is a mention (`<!channel>`, `<@U…>`) or a link (`<https://…|text>`).
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  // A backtick opens or closes code: the look-alike U+02CB cannot.
  '`': '\u02cb',
  // `@name` is turned into a mention by the chat SDK (outside code); a word joiner keeps it text.
  '@': '@\u2060',
};

/** For a chat message (Slack mrkdwn, Teams markdown), inside a code block or out: controls escaped, markup inert. */
export function forChat(text: string): string {
  return forTerminal(text).replace(/[&<>`@]/g, (c) => MARKUP[c]!);
}
