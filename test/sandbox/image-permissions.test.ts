// What the sandbox image lets its user (uid 1000, the user of the server and of every command)
// write, read from the Dockerfile: no Docker daemon runs where the tests do. The local stand-in shows
// the same layout, and packages/local-cloud/test/sandbox-isolation.test.ts attacks it there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SANDBOX_PATHS } from '../../packages/local-cloud/src/ecs/isolation.ts';

const IMAGE_DIR = join(import.meta.dirname, '../../containers/sandbox');

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
function instructions(dockerfile: string): Instruction[] {
  const logical = dockerfile
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return logical
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
    });
}

const dockerfile = instructions(readFileSync(join(IMAGE_DIR, 'Dockerfile'), 'utf8'));
const runs = dockerfile.filter((i) => i.keyword === 'RUN').map((i) => i.args);

test("the image's socket folder is root's and not writable by the sandbox user", () => {
  const socketDir = SANDBOX_PATHS.socketDir;
  assert.ok(
    runs.some((run) => run.includes(`install -d -o root -g root -m 0755 ${socketDir}`)),
    `the Dockerfile creates ${socketDir} owned by root, mode 0755`,
  );
  // Nothing later gives it (or /run) to anyone else.
  for (const run of runs) {
    for (const command of run.split(/&&|;/).map((c) => c.trim())) {
      if (/^(chown|chmod|chgrp|setfacl)\b/.test(command)) {
        assert.doesNotMatch(command, /\s\/run(\/|\s|$)/, `${command}: changes /run`);
      }
    }
  }
  // The server and its commands run as uid 1000, set after every RUN, not as root.
  const lastRun = dockerfile.findLastIndex((i) => i.keyword === 'RUN');
  const users = dockerfile.map((i, index) => ({ ...i, index })).filter((i) => i.keyword === 'USER');
  assert.deepEqual(
    users.map((u) => u.args),
    ['1000'],
  );
  assert.ok(users[0]!.index > lastRun, 'USER 1000 comes after every RUN');
});

test('uid 1000 owns only the workspace; /tmp is the only other writable place, and both are the volumes', () => {
  const chowns = runs.flatMap((run) => [...run.matchAll(/chown\s+(?:-\S+\s+)*(\S+)\s+(\S+)/g)].map((m) => [m[1], m[2]]));
  assert.deepEqual(chowns, [['1000:1000', '/workspace']]);
  const chmods = runs.flatMap((run) => [...run.matchAll(/chmod\s+(?:-\S+\s+)*(\S+)\s+(\S+)/g)].map((m) => [m[1], m[2]]));
  assert.deepEqual(chmods, [
    ['1777', '/tmp'],
    ['a-s', '{}'],
  ]);
  const volumes = dockerfile.filter((i) => i.keyword === 'VOLUME').map((i) => JSON.parse(i.args) as string[]);
  assert.deepEqual(volumes, [['/workspace', '/tmp']]);
});
