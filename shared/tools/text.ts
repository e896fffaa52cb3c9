// Pure text operations behind the file tools: numbered reads, exact-string edits, truncation.

export class ToolError extends Error {
  override name = 'ToolError';
}

/** What one read returns at most, whatever limit is asked for: the same budget as a command's output. */
export const MAX_READ_LINES = 2000;
export const MAX_READ_CHARS = 30_000;
const MAX_LINE_CHARS = 2000;

export function numberedLines(content: string, offset = 1, limit = MAX_READ_LINES): string {
  if (!Number.isInteger(offset) || offset < 1) throw new ToolError('offset must be a whole number of at least 1');
  if (!Number.isInteger(limit) || limit < 1) throw new ToolError('limit must be a whole number of at least 1');
  if (content === '') return '(empty file)';
  const lines = content.split('\n');
  if (content.endsWith('\n')) lines.pop();
  if (lines.length === 0) return '(empty file)';
  if (offset > lines.length) throw new ToolError(`offset ${offset} is past the end of the file (${lines.length} lines)`);
  const slice = lines.slice(offset - 1, offset - 1 + Math.min(limit, MAX_READ_LINES));
  const width = String(offset - 1 + slice.length).length;
  const body: string[] = [];
  let chars = 0;
  for (const [i, line] of slice.entries()) {
    const shown = `${String(offset + i).padStart(width)}\t${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… (line cut at ${MAX_LINE_CHARS} chars)` : line}`;
    if (body.length > 0 && chars + shown.length + 1 > MAX_READ_CHARS) break;
    body.push(shown);
    chars += shown.length + 1;
  }
  const rest = lines.length - (offset - 1 + body.length);
  const capped =
    limit > body.length && rest > 0
      ? ` (one read returns at most ${MAX_READ_LINES} lines and ${MAX_READ_CHARS.toLocaleString('en-US')} characters)`
      : '';
  return rest > 0 ? `${body.join('\n')}\n… ${rest} more lines (use offset ${offset + body.length})${capped}` : body.join('\n');
}

function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

export function applyEdit(
  content: string,
  edit: { path: string; old_string: string; new_string: string; replace_all?: boolean },
): { content: string; replaced: number } {
  if (edit.old_string === '') throw new ToolError('old_string is empty: use write to create or overwrite a file');
  if (edit.old_string === edit.new_string) throw new ToolError('old_string and new_string are the same: nothing to change');
  const count = occurrences(content, edit.old_string);
  if (count === 0)
    throw new ToolError(
      `old_string not found in ${edit.path}. Read the file to see its current content and copy the text exactly (whitespace included).`,
    );
  if (count > 1 && !edit.replace_all) {
    throw new ToolError(
      `old_string occurs ${count} times in ${edit.path}. Include more surrounding text to make it unique, or set replace_all to replace every occurrence.`,
    );
  }
  return { content: content.split(edit.old_string).join(edit.new_string), replaced: edit.replace_all ? count : 1 };
}

/** What the model sees of long output: the end (errors come last), with how much was cut. */
export function truncateForModel(text: string, maxChars = 30_000, maxLines = 400): { text: string; truncated: boolean } {
  const lines = text.split('\n');
  if (text.length <= maxChars && lines.length <= maxLines) return { text, truncated: false };
  let kept = lines.slice(-maxLines).join('\n');
  if (kept.length > maxChars) kept = kept.slice(-maxChars);
  return { text: kept, truncated: true };
}
