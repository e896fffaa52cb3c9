// YAML front matter, as SKILL.md and AGENT.md files carry it: the map between a first `---` line and
// the next, and the Markdown after it. Errors say what is wrong in words a file's author can act on.
import { parseDocument } from 'yaml';

/** The file is not what it should be; the message completes "… was not loaded because …". */
export class FrontMatterError extends Error {}

/** Frontmatter (the YAML between the opening and closing `---` lines) and the body after it. */
export function splitFrontmatter(body: string): { yaml: string; rest: string } {
  const lines = body.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trim() !== '---')
    throw new FrontMatterError(
      `it has no YAML frontmatter (the file must start with a '---' line, then name and description, then a closing '---' line)`,
    );
  const close = lines.findIndex((line, index) => index > 0 && line.trimEnd() === '---');
  if (close < 0) throw new FrontMatterError(`its frontmatter is never closed (no second '---' line)`);
  return { yaml: lines.slice(1, close).join('\n'), rest: lines.slice(close + 1).join('\n') };
}

export function parseYaml(yaml: string): unknown {
  const doc = parseDocument(yaml);
  const error = doc.errors[0];
  if (error) {
    // The frontmatter starts on line 2 of the file.
    const line = (error.linePos?.[0].line ?? 0) + 1;
    const message = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new FrontMatterError(`its frontmatter is not valid YAML (line ${line}: ${message})`);
  }
  try {
    return doc.toJS();
  } catch (e) {
    throw new FrontMatterError(`its frontmatter is not valid YAML (${(e as Error).message})`);
  }
}
