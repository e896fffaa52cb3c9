// No module imports itself through others, type-only imports included: a circle makes load order
// matter at run time and, at the type level, means two modules are one concern split in two.
// TypeScript's own import scanner reads each file; relative imports are followed.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['shared', 'functions', 'infra', 'containers', 'scripts', 'packages/local-cloud/src', 'bench', 'test'];

function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((file) => !file.split('/').includes('node_modules'));
}

/** Each file's relative imports (static, type-only, dynamic and re-exports), as repository paths. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
      const targets = importedFiles
        .map((i) => i.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => relative(ROOT, resolve(ROOT, dirname(file), name)))
        .filter((target) => known.has(target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** The strongly connected components of more than one file, or of a file importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

test('no import circle in the repository, type-only imports included', () => {
  const graph = importGraph(FOLDERS.flatMap(sourceFiles));
  assert.ok(graph.size > 300, `only ${graph.size} files found: is the scan reading the repository?`);
  assert.deepEqual(circles(graph), []);
});

test('the circle check finds a circle, also one of type-only imports', () => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
    ['e.ts', ['e.ts']],
  ]);
  assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  const scanned = ts.preProcessFile("import type { X } from './b.ts';\nexport * from './c.ts';", true, true);
  assert.deepEqual(
    scanned.importedFiles.map((i) => i.fileName),
    ['./b.ts', './c.ts'],
  );
});
