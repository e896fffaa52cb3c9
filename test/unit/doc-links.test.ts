// Every relative link in the README and the docs/ pages leads somewhere: the file exists, and a
// #fragment names a heading of that file as GitHub renders it (github-slugger is GitHub's own
// heading-to-anchor rule, so what passes here also works on the repository's web page).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'packages/local-cloud/src/README.md',
];

/** The text outside fenced code blocks and inline code, where a `[x](y)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

function anchors(file: string): Set<string> {
  const slugger = new GithubSlugger();
  // A heading's anchor is made from its text as rendered: inline code keeps its content, the backticks go.
  const headings = readFileSync(file, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .split('\n')
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => line.replace(/^#+ /, '').replace(/`/g, ''));
  return new Set(headings.map((heading) => slugger.slug(heading)));
}

function links(file: string): string[] {
  return [...prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
}

test('the README and the docs pages link only to files and headings that exist', () => {
  const broken: string[] = [];
  for (const page of pages) {
    const from = join(root, page);
    for (const target of links(from)) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [path, fragment] = target.split('#') as [string, string | undefined];
      const file = path ? join(dirname(from), decodeURI(path)) : from;
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no file ${relative(root, file)})`);
        continue;
      }
      if (fragment !== undefined && file.endsWith('.md') && !anchors(file).has(fragment)) {
        broken.push(`${page}: ${target} (no heading #${fragment} in ${relative(root, file)})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('the README stays a page a person reads top to bottom: at most 300 lines', () => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length;
  assert.ok(lines <= 300, `README.md has ${lines} lines; move reference material into docs/`);
});
