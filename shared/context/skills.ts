// Skills, in the agentskills.io format so skills written for other agents work here: a folder per skill holding SKILL.md (YAML frontmatter,
// then Markdown instructions) and any companion files. Three scopes of the S3 data tree hold them:
// skills/, {adapter}/skills/, {adapter}/{channel}/skills/; a narrower scope overrides a broader one by
// name. Our extensions live under `metadata` to stay spec-compliant: `trigger` (auto | keyword | manual)
// and `keywords`.
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { posix } from 'node:path';
import { DEFAULT_MAX_SKILL_BODY_CHARS } from '../defaults.ts';
import { dataKeys } from '../ids.ts';
import { FrontMatterError as Invalid, parseYaml, splitFrontmatter } from './front-matter.ts';
import { readText } from './store.ts';

export type SkillScope = 'global' | 'transport' | 'channel';
export type SkillTrigger = 'auto' | 'keyword' | 'manual';

export interface Skill {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  allowedTools: string[];
  trigger: SkillTrigger;
  keywords: string[];
  /** The Markdown instructions after the frontmatter, trimmed. */
  body: string;
  scope: SkillScope;
  /** S3 key of the SKILL.md. */
  key: string;
  /** S3 keys of the companion files in the skill's folder (subfolders included), sorted. */
  files: string[];
}

export type ParsedSkill = { ok: true; skill: Skill } | { ok: false; error: string };

export const SKILL_FILE = 'SKILL.md';
export const MAX_NAME_CHARS = 64;
export const MAX_DESCRIPTION_CHARS = 1024;
export const MAX_COMPATIBILITY_CHARS = 500;

const FIELDS = ['name', 'description', 'license', 'compatibility', 'allowed-tools', 'metadata'] as const;
const TRIGGERS: readonly SkillTrigger[] = ['auto', 'keyword', 'manual'];
/** Lowercase letters, digits and hyphens; no leading, trailing or doubled hyphen (agentskills.io). */
const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SKILL_SCOPES: readonly SkillScope[] = ['global', 'transport', 'channel'];

/** The scope of a `…skills/<name>/SKILL.md` key, from how many segments precede `skills/`. */
function locate(key: string): { scope: SkillScope; folder: string } | undefined {
  const parts = key.split('/');
  if (parts.length < 3 || parts.at(-1) !== SKILL_FILE || parts.at(-3) !== 'skills') return undefined;
  const scope = SKILL_SCOPES[parts.length - 3];
  const folder = parts.at(-2);
  return scope && folder ? { scope, folder } : undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const describe = (value: unknown) =>
  value === null ? 'empty' : Array.isArray(value) ? 'a list' : isRecord(value) ? 'a map' : `a ${typeof value}`;

/** Splits `allowed-tools` on whitespace or commas outside parentheses: `Bash(git log:*) Read` is two tools. */
function splitTools(value: string): string[] {
  const tools: string[] = [];
  let current = '';
  let depth = 0;
  for (const char of value) {
    if (char === '(') depth++;
    if (char === ')') depth = Math.max(0, depth - 1);
    if (depth === 0 && (char === ',' || /\s/.test(char))) {
      if (current) tools.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (current) tools.push(current);
  return tools;
}

/** `keywords`: a comma-separated string (a keyword may then contain spaces), else whitespace-separated. */
function splitKeywords(value: string): string[] {
  const parts = value.includes(',') ? value.split(',') : value.split(/\s+/);
  return parts.map((k) => k.trim().replace(/\s+/g, ' ')).filter(Boolean);
}

function optionalText(fm: Record<string, unknown>, field: string, max?: number): string | undefined {
  const value = fm[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !value.trim()) throw new Invalid(`${field} must be a non-empty string but is ${describe(value)}`);
  const text = value.trim();
  if (max !== undefined && text.length > max)
    throw new Invalid(`${field} is ${text.length} characters long, over the ${max}-character limit`);
  return text;
}

function validate(fm: unknown, folder: string): Omit<Skill, 'body' | 'scope' | 'key' | 'files'> {
  if (fm === null || fm === undefined) throw new Invalid('its frontmatter is empty (name and description are required)');
  if (!isRecord(fm)) throw new Invalid(`its frontmatter must be a map of fields but is ${describe(fm)}`);
  const unknown = Object.keys(fm).find((field) => !(FIELDS as readonly string[]).includes(field));
  if (unknown !== undefined) {
    throw new Invalid(
      `it has an unknown frontmatter field "${unknown}" (allowed: ${FIELDS.join(', ')}; put anything else, such as trigger or keywords, under metadata)`,
    );
  }

  const name = fm.name;
  if (name === undefined || name === null || name === '') throw new Invalid('its frontmatter has no name');
  if (typeof name !== 'string') throw new Invalid(`name must be a string but is ${describe(name)}`);
  if (name.length > MAX_NAME_CHARS) throw new Invalid(`name is ${name.length} characters long, over the ${MAX_NAME_CHARS}-character limit`);
  if (!NAME_PATTERN.test(name)) {
    throw new Invalid(`name "${name}" is invalid (use lowercase letters, digits and single hyphens, not at the start or end)`);
  }
  if (name !== folder) throw new Invalid(`name "${name}" does not match its folder name "${folder}"`);

  if (fm.description === undefined || fm.description === null || fm.description === '')
    throw new Invalid('its frontmatter has no description');
  const description = optionalText(fm, 'description', MAX_DESCRIPTION_CHARS)!;
  const license = optionalText(fm, 'license');
  const compatibility = optionalText(fm, 'compatibility', MAX_COMPATIBILITY_CHARS);

  const tools = fm['allowed-tools'];
  let allowedTools: string[] = [];
  if (typeof tools === 'string') allowedTools = splitTools(tools);
  else if (Array.isArray(tools) && tools.every((t) => typeof t === 'string')) allowedTools = tools.map((t) => t.trim()).filter(Boolean);
  else if (tools !== undefined && tools !== null)
    throw new Invalid(`allowed-tools must be a space-separated string or a list of strings but is ${describe(tools)}`);

  const metadata = fm.metadata ?? {};
  if (!isRecord(metadata)) throw new Invalid(`metadata must be a map of string keys to string values but is ${describe(metadata)}`);
  for (const [key, value] of Object.entries(metadata)) {
    if (key === 'keywords' && Array.isArray(value) && value.every((k) => typeof k === 'string')) continue;
    // Unquoted numbers and booleans (`version: 1.0`) are tolerated; lists, maps and empty values are not.
    if (!['string', 'number', 'boolean'].includes(typeof value))
      throw new Invalid(`metadata.${key} must be a string but is ${describe(value)}`);
  }

  const rawTrigger = metadata.trigger ?? 'auto';
  const trigger = TRIGGERS.find((t) => t === (typeof rawTrigger === 'string' ? rawTrigger.trim().toLowerCase() : rawTrigger));
  if (!trigger) throw new Invalid(`metadata.trigger "${String(rawTrigger)}" is not one of ${TRIGGERS.join(', ')}`);
  const rawKeywords = metadata.keywords;
  const keywords = Array.isArray(rawKeywords)
    ? (rawKeywords as string[]).map((k) => k.trim().replace(/\s+/g, ' ')).filter(Boolean)
    : typeof rawKeywords === 'string'
      ? splitKeywords(rawKeywords)
      : rawKeywords === undefined
        ? []
        : [String(rawKeywords)];
  if (trigger === 'keyword' && keywords.length === 0) {
    throw new Invalid('metadata.trigger is keyword but metadata.keywords is missing or empty (give them as "deploy, release")');
  }

  return {
    name,
    description,
    ...(license ? { license } : {}),
    ...(compatibility ? { compatibility } : {}),
    allowedTools,
    trigger,
    keywords,
  };
}

/**
 * Parses one SKILL.md. `key` is its S3 key (`[adapter/[channel/]]skills/<name>/SKILL.md`), which gives
 * the scope and the folder name the skill's name must equal. `files` is left empty: the loader fills
 * it in from the listing.
 */
export function parseSkillFile(key: string, body: string): ParsedSkill {
  try {
    const where = locate(key);
    if (!where) throw new Invalid(`it is not at skills/<name>/${SKILL_FILE} in a global, transport or channel skills folder`);
    const { yaml, rest } = splitFrontmatter(body);
    const fields = validate(parseYaml(yaml), where.folder);
    return { ok: true, skill: { ...fields, body: rest.trim(), scope: where.scope, key, files: [] } };
  } catch (error) {
    if (error instanceof Invalid) return { ok: false, error: `Skill ${key} was not loaded because ${error.message}.` };
    throw error;
  }
}

export interface SkillDeps {
  s3: S3Client;
  bucket: string;
}

/** The three skills prefixes of a thread, broadest first (the same ones the sandbox syncs). */
export function skillPrefixes(threadId: string): Record<SkillScope, string> {
  const keys = dataKeys(threadId);
  return { global: 'skills/', transport: `${keys.transportDir}/skills/`, channel: `${keys.channelDir}/skills/` };
}

async function listKeys(deps: SkillDeps, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const out = await deps.s3.send(new ListObjectsV2Command({ Bucket: deps.bucket, Prefix: prefix, ContinuationToken: token }));
    for (const object of out.Contents ?? []) if (object.Key) keys.push(object.Key);
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** One scope's skill folders: `<prefix><name>/` -> whether it has a SKILL.md, and its other files. */
function groupFolders(prefix: string, keys: string[]): Map<string, { hasSkillFile: boolean; files: string[] }> {
  const folders = new Map<string, { hasSkillFile: boolean; files: string[] }>();
  for (const key of keys) {
    const rest = key.slice(prefix.length);
    const slash = rest.indexOf('/');
    if (slash <= 0) continue; // a file directly in skills/ is not a skill
    const inside = rest.slice(slash + 1);
    if (inside === '' || inside.endsWith('/')) continue; // folder markers
    const folder = `${prefix}${rest.slice(0, slash)}/`;
    const entry = folders.get(folder) ?? { hasSkillFile: false, files: [] };
    if (inside === SKILL_FILE) entry.hasSkillFile = true;
    else entry.files.push(key);
    folders.set(folder, entry);
  }
  return folders;
}

/**
 * One scope's skills: every `<prefix><name>/SKILL.md` under `prefix` (one of skillPrefixes), with its
 * companion files. A SKILL.md that does not parse is skipped and reported through `log`; the others still load.
 */
export async function loadScopeSkills(deps: SkillDeps, prefix: string, log: (problem: string) => void): Promise<Skill[]> {
  const folders = groupFolders(prefix, await listKeys(deps, prefix));
  const parsed = await Promise.all(
    [...folders].map(async ([folder, { hasSkillFile, files }]) => {
      if (!hasSkillFile) {
        log(`Skill folder ${folder} was not loaded because it has no ${SKILL_FILE}.`);
        return undefined;
      }
      const key = `${folder}${SKILL_FILE}`;
      const body = await readText(deps, key);
      if (body === undefined) return undefined; // deleted since the listing
      const result = parseSkillFile(key, body);
      if (!result.ok) {
        log(result.error);
        return undefined;
      }
      return { ...result.skill, files: files.sort() };
    }),
  );
  return parsed.filter((skill): skill is Skill => skill !== undefined);
}

/** The scopes' skills (broadest first) as one list: a narrower scope overrides a broader one by name, sorted by name (a stable prompt). */
export function mergeSkills(scopes: readonly Skill[][]): Skill[] {
  const merged = new Map<string, Skill>();
  for (const skills of scopes) for (const skill of skills) merged.set(skill.name, skill);
  return [...merged.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The skills a thread can use: every `<prefix><name>/SKILL.md` of the global, transport and channel
 * scopes, channel overriding transport overriding global by name, sorted by name (a stable prompt).
 * A SKILL.md that does not parse is skipped and reported through `log`; the others still load.
 */
export async function loadSkills(deps: SkillDeps, threadId: string, log: (problem: string) => void): Promise<Skill[]> {
  const prefixes = skillPrefixes(threadId);
  return mergeSkills(await Promise.all(SKILL_SCOPES.map((scope) => loadScopeSkills(deps, prefixes[scope], log))));
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whole-word, case-insensitive: "deploy" matches "Deploy now" and "pre-deploy" but not "deployment". */
function mentions(text: string, keyword: string): boolean {
  const pattern = keyword.split(/\s+/).map(escapeRegExp).join('\\s+');
  return new RegExp(`(?<![\\p{L}\\p{N}_])${pattern}(?![\\p{L}\\p{N}_])`, 'iu').test(text);
}

/** Names asked for with `use skill: NAME` (case-insensitive, any number of times), lowercased, in order. */
export function requestedSkillNames(userText: string): string[] {
  const names = [...userText.matchAll(/\buse\s+skill\s*:\s*[`"']?([a-z0-9]+(?:-[a-z0-9]+)*)/giu)].map((m) => m[1]!.toLowerCase());
  return [...new Set(names)];
}

/**
 * The skills to put in the prompt for this message: auto skills always, keyword skills when the
 * message mentions one of their keywords, and any skill (manual ones included) the user asks for
 * with `use skill: NAME`. `manualRequested` lists the names asked for that no skill has.
 */
export function selectSkills(skills: Skill[], userText: string): { offered: Skill[]; manualRequested: string[] } {
  const requested = requestedSkillNames(userText);
  const offered = skills.filter(
    (skill) =>
      requested.includes(skill.name) ||
      skill.trigger === 'auto' ||
      (skill.trigger === 'keyword' && skill.keywords.some((keyword) => mentions(userText, keyword))),
  );
  const known = new Set(skills.map((skill) => skill.name));
  return { offered, manualRequested: requested.filter((name) => !known.has(name)) };
}

/**
 * The `## Skills` section of the system prompt: each skill's name, description, folder in the sandbox
 * (`sandboxPathOf` maps an S3 key to its sandbox path, e.g. /workspace/data/<key>), companion files,
 * allowed tools and instructions. '' when there are none.
 */
export function formatSkillsForPrompt(
  skills: Skill[],
  sandboxPathOf: (key: string) => string,
  maxBodyChars = DEFAULT_MAX_SKILL_BODY_CHARS,
): string {
  if (skills.length === 0) return '';
  const sections = skills.map((skill) => {
    const folder = posix.dirname(sandboxPathOf(skill.key));
    const body =
      skill.body.length > maxBodyChars
        ? `${skill.body.slice(0, maxBodyChars)}\n[truncated: these instructions are ${skill.body.length.toLocaleString('en-US')} characters, over the ` +
          `${maxBodyChars.toLocaleString('en-US')}-character limit (maxSkillBodyChars in settings.json); the rest is in ${sandboxPathOf(skill.key)}]`
        : skill.body;
    const folderKey = skill.key.slice(0, -SKILL_FILE.length);
    const lines = [`### ${skill.name}`, skill.description, `- Folder: ${folder}`];
    if (skill.files.length)
      lines.push(`- Files: ${skill.files.map((f) => (f.startsWith(folderKey) ? f.slice(folderKey.length) : f)).join(', ')}`);
    if (skill.allowedTools.length) lines.push(`- Allowed tools: ${skill.allowedTools.join(' ')}`);
    if (skill.compatibility) lines.push(`- Requires: ${skill.compatibility}`);
    if (body) lines.push('', `<instructions skill="${skill.name}">`, body, '</instructions>');
    return lines.join('\n');
  });
  return [
    '## Skills',
    "Skills are instructions for particular kinds of task. Follow a skill's instructions when the task fits its description; paths in a skill are relative to its folder.",
    ...sections,
  ].join('\n\n');
}
