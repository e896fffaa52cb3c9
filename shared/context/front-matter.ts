// YAML front matter, as SKILL.md and AGENT.md files carry it: the map between a first `---` line and
// the next, and the Markdown after it. Errors say what is wrong in words a file's author can act on.
// js-yaml rather than yaml: the same YAML 1.2 core schema at under half the bundle (the agent step parses these).
import { load, YAMLException } from 'js-yaml';

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
  // An empty document (blank or only comments) is null in YAML; js-yaml refuses it instead.
  if (!/^[ \t]*[^\s#]/m.test(yaml)) return null;
  try {
    return load(yaml);
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const mark = error.mark;
    // The frontmatter starts on line 2 of the file (the mark's line counts from 0).
    const where = mark ? `line ${mark.line + 2}: ` : '';
    throw new FrontMatterError(`its frontmatter is not valid YAML (${where}${mark ? explained(error.reason, yaml, mark) : error.reason})`);
  }
}

/** The mistake authors make most, a colon and space inside an unquoted value, said as such. */
function explained(reason: string, yaml: string, mark: { line: number; column: number }): string {
  const before = (yaml.split('\n')[mark.line] ?? '').slice(0, mark.column);
  if (reason !== 'bad indentation of a mapping entry' || !/^\s*[^\s:#][^:]*:\s/.test(before)) return reason;
  return `the value holds ": " at column ${mark.column + 1}; put the whole value in quotes, as in description: "Use when: …"`;
}
