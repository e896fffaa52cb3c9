// Skills: SKILL.md parsing (agentskills.io format), loading the three scopes from S3 (fauxqs),
// trigger modes and the system prompt section.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { toSandboxPath } from '../../shared/sandbox/workspace.ts';
import { formatSkillsForPrompt, loadSkills, parseSkillFile, selectSkills, type Skill } from '../../shared/context/skills.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/skills/', import.meta.url));
const REAL = ['changelog', 'incident-triage', 'release-notes', 'sql-review'];
const THREAD = 'slack:C1:1700000000.000100';
const sandboxPath = (key: string) => `/workspace/${toSandboxPath(key)}`;

/** Every fixture file as [path relative to the fixtures folder, body]. */
function fixtureFiles(): [string, string][] {
  return readdirSync(FIXTURES, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return [relative(FIXTURES, path).split(sep).join('/'), readFileSync(path, 'utf8')] as [string, string];
    })
    .sort(([a], [b]) => a.localeCompare(b));
}

const fixture = (name: string) => readFileSync(join(FIXTURES, name, 'SKILL.md'), 'utf8');

function parsed(key: string, body: string): Skill {
  const result = parseSkillFile(key, body);
  if (!result.ok) assert.fail(result.error);
  return result.skill;
}

function parseError(body: string, key = 'skills/demo/SKILL.md'): string {
  const result = parseSkillFile(key, body);
  assert.equal(result.ok, false, `expected ${key} to be rejected`);
  return result.ok ? '' : result.error;
}

const skillMd = (frontmatter: string, body = 'Do the thing.') => `---\n${frontmatter}\n---\n\n${body}\n`;

// ---------------------------------------------------------------------------------------------
// parseSkillFile
// ---------------------------------------------------------------------------------------------

test('every real fixture parses, with the fields of the agentskills.io format', () => {
  const skills = Object.fromEntries(REAL.map((name) => [name, parsed(`skills/${name}/SKILL.md`, fixture(name))]));

  const notes = skills['release-notes']!;
  assert.equal(notes.trigger, 'auto');
  assert.deepEqual(notes.allowedTools, []);
  assert.equal(notes.scope, 'global');
  assert.equal(notes.key, 'skills/release-notes/SKILL.md');
  assert.match(notes.description, /^Writes customer-facing release notes/);
  assert.match(notes.body, /^# Release notes\n/);
  assert.doesNotMatch(notes.body, /---/);
  assert.equal(notes.license, undefined);

  const triage = skills['incident-triage']!;
  assert.equal(triage.trigger, 'keyword');
  assert.deepEqual(triage.keywords, ['incident', 'outage', 'sev1', 'sev2', 'pagerduty', 'on call']);

  const review = skills['sql-review']!;
  assert.equal(review.trigger, 'manual');
  assert.equal(review.license, 'MIT');
  assert.deepEqual(review.allowedTools, ['Read', 'Bash(psql:*)']);

  const changelog = skills.changelog!;
  assert.equal(changelog.license, 'Apache-2.0');
  assert.equal(changelog.compatibility, 'Requires git and a clone of the repository in the sandbox workspace.');
  assert.deepEqual(changelog.allowedTools, ['Bash(git log:*)', 'Bash(git tag:*)', 'Read', 'Edit']);
  assert.equal(changelog.trigger, 'auto');
});

test('the scope comes from where the SKILL.md is', () => {
  const body = skillMd('name: demo\ndescription: A demo skill.');
  assert.equal(parsed('skills/demo/SKILL.md', body).scope, 'global');
  assert.equal(parsed('slack/skills/demo/SKILL.md', body).scope, 'transport');
  assert.equal(parsed('slack/C1/skills/demo/SKILL.md', body).scope, 'channel');
  assert.match(parseError(body, 'slack/C1/1.1/skills/demo/SKILL.md'), /is not at skills\/<name>\/SKILL\.md/);
  assert.match(parseError(body, 'skills/demo/README.md'), /is not at skills\/<name>\/SKILL\.md/);
});

test('CRLF line endings and a byte-order mark are accepted; an empty body is allowed', () => {
  const skill = parsed('skills/demo/SKILL.md', '\uFEFF---\r\nname: demo\r\ndescription: A demo skill.\r\n---\r\nStep one.\r\n');
  assert.equal(skill.body, 'Step one.');
  assert.equal(parsed('skills/demo/SKILL.md', '---\nname: demo\ndescription: x\n---\n').body, '');
});

test('the malformed fixture is rejected with the YAML error and the line it is on', () => {
  const error = parseError(fixture('deploy-checklist'), 'skills/deploy-checklist/SKILL.md');
  assert.equal(
    error,
    'Skill skills/deploy-checklist/SKILL.md was not loaded because its frontmatter is not valid YAML (line 3: the value holds ": " at column 23; put the whole value in quotes, as in description: "Use when: …").',
  );
});

test('each kind of malformed SKILL.md gets one sentence naming the file and the problem', () => {
  const long = (n: number) => 'x'.repeat(n);
  const cases: [string, string, RegExp][] = [
    ['no frontmatter', '# Demo\n\nJust Markdown.\n', /has no YAML frontmatter/],
    ['unclosed frontmatter', '---\nname: demo\ndescription: A demo.\n\nBody\n', /frontmatter is never closed/],
    ['YAML error', skillMd('name: demo\ndescription: "unterminated\nlicense: MIT'), /is not valid YAML \(line 4: deficient indentation\)/],
    ['duplicate key', skillMd('name: demo\ndescription: a\ndescription: b'), /is not valid YAML \(line 4: duplicated mapping key\)/],
    ['empty frontmatter', '---\n---\nBody\n', /frontmatter is empty/],
    ['frontmatter is a list', skillMd('- name\n- description'), /must be a map of fields but is a list/],
    ['missing name', skillMd('description: A demo.'), /has no name/],
    ['name not a string', skillMd('name: 42\ndescription: A demo.'), /name must be a string but is a number/],
    [
      'uppercase name',
      skillMd('name: Demo\ndescription: A demo.'),
      /name "Demo" is invalid \(use lowercase letters, digits and single hyphens/,
    ],
    ['underscore in name', skillMd('name: my_demo\ndescription: A demo.'), /name "my_demo" is invalid/],
    ['leading hyphen', skillMd('name: -demo\ndescription: A demo.'), /name "-demo" is invalid/],
    ['doubled hyphen', skillMd('name: de--mo\ndescription: A demo.'), /name "de--mo" is invalid/],
    ['name too long', skillMd(`name: ${long(65)}\ndescription: A demo.`), /name is 65 characters long, over the 64-character limit/],
    ['name is not the folder', skillMd('name: other\ndescription: A demo.'), /name "other" does not match its folder name "demo"/],
    ['missing description', skillMd('name: demo'), /has no description/],
    ['blank description', skillMd('name: demo\ndescription: "   "'), /description must be a non-empty string/],
    [
      'description too long',
      skillMd(`name: demo\ndescription: ${long(1025)}`),
      /description is 1025 characters long, over the 1024-character limit/,
    ],
    [
      'compatibility too long',
      skillMd(`name: demo\ndescription: A demo.\ncompatibility: ${long(501)}`),
      /compatibility is 501 characters long, over the 500-character limit/,
    ],
    [
      'license not a string',
      skillMd('name: demo\ndescription: A demo.\nlicense: [MIT]'),
      /license must be a non-empty string but is a list/,
    ],
    [
      'allowed-tools a map',
      skillMd('name: demo\ndescription: A demo.\nallowed-tools:\n  bash: yes'),
      /allowed-tools must be a space-separated string or a list of strings but is a map/,
    ],
    [
      'metadata a list',
      skillMd('name: demo\ndescription: A demo.\nmetadata: [a, b]'),
      /metadata must be a map of string keys to string values but is a list/,
    ],
    [
      'nested metadata',
      skillMd('name: demo\ndescription: A demo.\nmetadata:\n  owner:\n    team: x'),
      /metadata\.owner must be a string but is a map/,
    ],
    [
      'unknown trigger',
      skillMd('name: demo\ndescription: A demo.\nmetadata:\n  trigger: sometimes'),
      /metadata\.trigger "sometimes" is not one of auto, keyword, manual/,
    ],
    [
      'keyword trigger without keywords',
      skillMd('name: demo\ndescription: A demo.\nmetadata:\n  trigger: keyword'),
      /trigger is keyword but metadata\.keywords is missing or empty/,
    ],
    [
      'keyword trigger with blank keywords',
      skillMd('name: demo\ndescription: A demo.\nmetadata:\n  trigger: keyword\n  keywords: " , "'),
      /metadata\.keywords is missing or empty/,
    ],
    ['unknown top-level field', skillMd('name: demo\ndescription: A demo.\nauthor: sam'), /unknown frontmatter field "author"/],
    [
      'trigger at the top level',
      skillMd('name: demo\ndescription: A demo.\ntrigger: manual'),
      /unknown frontmatter field "trigger" .*under metadata/,
    ],
  ];
  for (const [what, body, expected] of cases) {
    const error = parseError(body);
    assert.match(error, /^Skill skills\/demo\/SKILL\.md was not loaded because /, what);
    assert.match(error, expected, what);
    assert.ok(error.endsWith('.') && !error.includes('\n'), `${what}: one sentence, got ${JSON.stringify(error)}`);
  }
});

test('allowed-tools and keywords accept the forms people write', () => {
  const skill = parsed(
    'skills/demo/SKILL.md',
    skillMd(
      'name: demo\ndescription: A demo.\nallowed-tools: "Read, Grep  Bash(git add:*)"\nmetadata:\n  version: 1.0\n  trigger: keyword\n  keywords: deploy release  rollback',
    ),
  );
  assert.deepEqual(skill.allowedTools, ['Read', 'Grep', 'Bash(git add:*)']);
  assert.deepEqual(skill.keywords, ['deploy', 'release', 'rollback']);
  const listed = parsed(
    'skills/demo/SKILL.md',
    skillMd('name: demo\ndescription: A demo.\nmetadata:\n  trigger: Keyword\n  keywords: [go live, ship]'),
  );
  assert.equal(listed.trigger, 'keyword');
  assert.deepEqual(listed.keywords, ['go live', 'ship']);
});

// ---------------------------------------------------------------------------------------------
// selectSkills / formatSkillsForPrompt (no S3)
// ---------------------------------------------------------------------------------------------

const realSkills = () => REAL.map((name) => parsed(`skills/${name}/SKILL.md`, fixture(name)));
const offeredNames = (skills: Skill[], text: string) => selectSkills(skills, text).offered.map((s) => s.name);

test('auto skills are always offered, keyword skills on a whole-word match, manual ones only when asked for', () => {
  const skills = realSkills();
  assert.deepEqual(offeredNames(skills, 'Good morning!'), ['changelog', 'release-notes']);
  assert.deepEqual(offeredNames(skills, 'We have an OUTAGE in eu-west-1'), ['changelog', 'incident-triage', 'release-notes']);
  assert.deepEqual(offeredNames(skills, 'Who is on-call? No, who is on  call this week?'), [
    'changelog',
    'incident-triage',
    'release-notes',
  ]);
  assert.deepEqual(offeredNames(skills, 'sev1: checkout is down'), ['changelog', 'incident-triage', 'release-notes']);
  // Whole words only: neither "incidents" nor "sev10" nor "on-call" (the keyword is "on call") match.
  assert.deepEqual(offeredNames(skills, 'How many incidents were sev10 last year? Ask on-call.'), ['changelog', 'release-notes']);
  assert.deepEqual(offeredNames(skills, 'Can you review this SQL?'), ['changelog', 'release-notes']);
  assert.deepEqual(offeredNames(skills, 'Please use skill: sql-review on the migration below'), [
    'changelog',
    'release-notes',
    'sql-review',
  ]);
});

test('"use skill: NAME" is case-insensitive, may repeat, and reports names that do not exist', () => {
  const skills = realSkills();
  const result = selectSkills(
    skills,
    'USE SKILL: SQL-Review, then Use Skill:`incident-triage` and use skill:  cost-report. Also use skill: sql-review.',
  );
  assert.deepEqual(
    result.offered.map((s) => s.name),
    ['changelog', 'incident-triage', 'release-notes', 'sql-review'],
  );
  assert.deepEqual(result.manualRequested, ['cost-report']);
  assert.deepEqual(selectSkills(skills, 'use skill: changelog').manualRequested, []);
  assert.deepEqual(selectSkills([], 'use skill: anything').manualRequested, ['anything']);
  assert.deepEqual(selectSkills(skills, 'I use skills: a lot').manualRequested, []);
});

test('the prompt section has each skill name, description, folder, files, allowed tools and instructions', () => {
  const skills = realSkills();
  skills[2] = { ...skills[2]!, files: ['skills/release-notes/examples/v2.3.0.md', 'skills/release-notes/template.md'] };
  const section = formatSkillsForPrompt(skills, sandboxPath);
  assert.match(section, /^## Skills\n/);
  for (const skill of skills) {
    assert.ok(section.includes(`### ${skill.name}\n${skill.description}\n- Folder: /workspace/data/skills/${skill.name}\n`), skill.name);
    assert.ok(section.includes(`<instructions skill="${skill.name}">\n${skill.body}\n</instructions>`), skill.name);
  }
  assert.match(section, /- Files: examples\/v2\.3\.0\.md, template\.md\n/);
  assert.match(section, /- Allowed tools: Bash\(git log:\*\) Bash\(git tag:\*\) Read Edit\n/);
  assert.match(section, /- Requires: Requires git and a clone/);
  assert.equal(formatSkillsForPrompt([], sandboxPath), '');
});

// ---------------------------------------------------------------------------------------------
// loadSkills against S3 (fauxqs)
// ---------------------------------------------------------------------------------------------

let emulator: Emulator;
let s3: S3Client;
let bucketCount = 0;
let listCalls = 0;
/** When set, ListObjectsV2 returns pages of this many keys. */
let pageSize: number | undefined;

before(async () => {
  emulator = await startSqsAndS3();
  s3 = new S3Client({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    forcePathStyle: true,
  });
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'ListObjectsV2Command') {
        listCalls++;
        if (pageSize) (args.input as { MaxKeys?: number }).MaxKeys = pageSize;
      }
      return next(args);
    },
    { step: 'initialize', name: 'countListings' },
  );
});

after(async () => {
  s3?.destroy();
  await emulator?.stop();
});

/** A fresh bucket, with `put(prefix)` uploading the fixtures (or some of them) under a prefix. */
async function bucket() {
  const name = `skills-${++bucketCount}`;
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  const putText = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: name, Key: key, Body: body }));
  const putFixtures = async (prefix: string, only?: string[]) => {
    for (const [path, body] of fixtureFiles()) {
      if (only && !only.some((folder) => path.startsWith(`${folder}/`))) continue;
      await putText(`${prefix}${path}`, body);
    }
  };
  const problems: string[] = [];
  const load = (threadId = THREAD) => loadSkills({ s3, bucket: name }, threadId, (p) => problems.push(p));
  return { putText, putFixtures, load, problems };
}

test('all real fixtures load from the global scope; the malformed one is skipped with its error logged', async () => {
  const b = await bucket();
  await b.putFixtures('skills/');
  const skills = await b.load();
  assert.deepEqual(
    skills.map((s) => s.name),
    REAL,
  );
  for (const skill of skills) {
    assert.equal(skill.scope, 'global');
    assert.equal(skill.key, `skills/${skill.name}/SKILL.md`);
    assert.deepEqual({ ...skill, files: [] }, parsed(skill.key, fixture(skill.name)));
  }
  assert.deepEqual(b.problems, [
    'Skill skills/deploy-checklist/SKILL.md was not loaded because its frontmatter is not valid YAML (line 3: the value holds ": " at column 23; put the whole value in quotes, as in description: "Use when: …").',
  ]);
});

test('companion files are listed with their keys, subfolders included', async () => {
  const b = await bucket();
  await b.putFixtures('skills/', ['release-notes', 'changelog', 'sql-review']);
  await b.putText('skills/sql-review/', ''); // a folder marker, as consoles create them
  const skills = await b.load();
  const files = Object.fromEntries(skills.map((s) => [s.name, s.files]));
  assert.deepEqual(files, {
    changelog: ['skills/changelog/scripts/commits-since.sh'],
    'release-notes': ['skills/release-notes/examples/v2.3.0.md', 'skills/release-notes/template.md'],
    'sql-review': [],
  });
  assert.deepEqual(b.problems, []);
});

test('a narrower scope overrides a broader one by name, and other channels and threads are not read', async () => {
  const b = await bucket();
  await b.putFixtures('skills/', REAL);
  const variant = (scope: string) =>
    skillMd(`name: release-notes\ndescription: Release notes, the ${scope} way.`, `Use the ${scope} template.`);
  await b.putText('slack/skills/release-notes/SKILL.md', variant('transport'));
  await b.putText('slack/skills/changelog/SKILL.md', skillMd('name: changelog\ndescription: Changelog for Slack.'));
  await b.putText('slack/C1/skills/release-notes/SKILL.md', variant('channel'));
  await b.putText('slack/C1/skills/release-notes/template.md', '# Channel template');
  await b.putText('slack/C2/skills/payroll/SKILL.md', skillMd('name: payroll\ndescription: Another channel only.'));
  await b.putText('slack/C1/1700000000.000100/skills/thread-only/SKILL.md', skillMd('name: thread-only\ndescription: Not a skills scope.'));
  await b.putText('cli/skills/terminal/SKILL.md', skillMd('name: terminal\ndescription: Another transport only.'));

  const skills = await b.load();
  const byName = new Map(skills.map((s) => [s.name, s]));
  assert.deepEqual([...byName.keys()], REAL);
  const notes = byName.get('release-notes')!;
  assert.equal(notes.scope, 'channel');
  assert.equal(notes.key, 'slack/C1/skills/release-notes/SKILL.md');
  assert.equal(notes.description, 'Release notes, the channel way.');
  assert.equal(notes.body, 'Use the channel template.');
  assert.deepEqual(notes.files, ['slack/C1/skills/release-notes/template.md']);
  assert.equal(byName.get('changelog')!.scope, 'transport');
  assert.equal(byName.get('changelog')!.description, 'Changelog for Slack.');
  assert.equal(byName.get('sql-review')!.scope, 'global');
  assert.deepEqual(b.problems, []);

  // Another channel of the same transport sees the transport's version, and its own skill.
  const other = await b.load('slack:C2:1.1');
  assert.deepEqual(
    other.map((s) => `${s.name}@${s.scope}`),
    ['changelog@transport', 'incident-triage@global', 'payroll@channel', 'release-notes@transport', 'sql-review@global'],
  );
});

test('channel ids are key-encoded as in the data tree', async () => {
  const b = await bucket();
  await b.putText('cli/dev%20box/skills/local-only/SKILL.md', skillMd('name: local-only\ndescription: For the dev box.'));
  const skills = await b.load('cli:dev box:t1');
  assert.deepEqual(
    skills.map((s) => [s.name, s.scope, s.key]),
    [['local-only', 'channel', 'cli/dev%20box/skills/local-only/SKILL.md']],
  );
});

test('a malformed channel skill is skipped and logged while the other scopes still load', async () => {
  const b = await bucket();
  await b.putFixtures('skills/', REAL);
  await b.putText('slack/C1/skills/sql-review/SKILL.md', skillMd('name: sql-reviews\ndescription: Typo in the name.'));
  await b.putText('slack/C1/skills/deploy-checklist/SKILL.md', fixture('deploy-checklist'));
  await b.putText('slack/skills/notes/README.md', 'A folder without a SKILL.md.');
  await b.putText('slack/skills/loose-file.md', 'Not in a skill folder.');
  const skills = await b.load();
  assert.deepEqual(
    skills.map((s) => `${s.name}@${s.scope}`),
    REAL.map((n) => `${n}@global`),
  );
  assert.deepEqual(b.problems.sort(), [
    'Skill folder slack/skills/notes/ was not loaded because it has no SKILL.md.',
    'Skill slack/C1/skills/deploy-checklist/SKILL.md was not loaded because its frontmatter is not valid YAML (line 3: the value holds ": " at column 23; put the whole value in quotes, as in description: "Use when: …").',
    'Skill slack/C1/skills/sql-review/SKILL.md was not loaded because name "sql-reviews" does not match its folder name "sql-review".',
  ]);
});

test('listings are followed across pages', async (t) => {
  // fauxqs 1.9.2 sorts a listing with localeCompare but resumes after a continuation token in byte
  // order, so paginated listings of mixed-case keys (SKILL.md beside examples/) skip and repeat keys
  // there (real S3 uses byte order throughout). These keys sort the same either way.
  const b = await bucket();
  const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf'];
  for (const name of names) await b.putText(`skills/${name}/SKILL.md`, skillMd(`name: ${name}\ndescription: Skill ${name}.`));
  await b.putText('slack/C1/skills/hotel/SKILL.md', skillMd('name: hotel\ndescription: Skill hotel.'));
  pageSize = 2;
  listCalls = 0;
  t.after(() => {
    pageSize = undefined;
  });
  const skills = await b.load();
  assert.deepEqual(
    skills.map((s) => s.name),
    [...names, 'hotel'],
  );
  assert.equal(listCalls, 4 + 1 + 1); // 7 keys in pages of 2, the empty transport scope, 1 channel key
});

test('an empty bucket has no skills and no problems', async () => {
  const b = await bucket();
  assert.deepEqual(await b.load(), []);
  assert.deepEqual(b.problems, []);
});

test('end to end: loaded skills, selected for a message, formatted with sandbox paths', async () => {
  const b = await bucket();
  await b.putFixtures('skills/', ['release-notes', 'changelog']);
  await b.putFixtures('slack/skills/', ['incident-triage']);
  await b.putFixtures('slack/C1/skills/', ['sql-review']);
  const skills = await b.load();

  const quiet = selectSkills(skills, 'hello');
  assert.deepEqual(
    quiet.offered.map((s) => s.name),
    ['changelog', 'release-notes'],
  );

  const { offered, manualRequested } = selectSkills(skills, 'Incident! And use skill: SQL-REVIEW please, or use skill: db-tuning');
  assert.deepEqual(
    offered.map((s) => s.name),
    ['changelog', 'incident-triage', 'release-notes', 'sql-review'],
  );
  assert.deepEqual(manualRequested, ['db-tuning']);

  const section = formatSkillsForPrompt(offered, sandboxPath);
  for (const skill of offered) {
    assert.ok(section.includes(`### ${skill.name}`), skill.name);
    assert.ok(section.includes(skill.description), skill.name);
    assert.ok(section.includes(skill.body), skill.name);
  }
  assert.match(section, /- Folder: \/workspace\/data\/skills\/release-notes\n- Files: examples\/v2\.3\.0\.md, template\.md\n/);
  assert.match(section, /- Folder: \/workspace\/data\/slack\/skills\/incident-triage\n/);
  assert.match(section, /- Folder: \/workspace\/data\/slack\/C1\/skills\/sql-review\n- Allowed tools: Read Bash\(psql:\*\)\n/);
  assert.match(section, /- Folder: \/workspace\/data\/skills\/changelog\n- Files: scripts\/commits-since\.sh\n/);
});
