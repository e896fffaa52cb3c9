// An agent definition: a folder with an AGENT.md whose YAML front matter says which model, tools,
// skills and bounds the agent works with, and whose body is its instructions. Operators keep them at
// the data bucket's root (`agents/<name>/AGENT.md`); a channel keeps its own under its folder
// (`{adapter}/{channel}/agents/<name>/AGENT.md`), written by its admins or its agent.
import * as z from 'zod';
import { dataKeys } from '../ids.ts';
import { FrontMatterError, parseYaml, splitFrontmatter } from '../context/front-matter.ts';
import { formatIssues } from '../support/validation.ts';
import { agentNameSchema } from './name.ts';

export const AGENT_FILE = 'AGENT.md';
export const MAX_AGENT_INSTRUCTIONS_CHARS = 20_000;

const frontMatterSchema = z.strictObject({
  name: agentNameSchema,
  description: z.string().trim().min(1).max(1024),
  /** A model or inference profile id; the deployment's IAM must allow it (the deployed one always is). */
  model: z.string().trim().min(1).max(200).optional(),
  /** Names of the run's tools; absent: every tool. */
  tools: z.array(z.string().min(1).max(64)).min(1).max(100).optional(),
  /** Names of skills in scope; absent: every skill. */
  skills: z.array(z.string().min(1).max(64)).max(100).optional(),
  /** At most settings.json `maxModelSteps`: a definition can lower the bound, never raise it. */
  maxModelSteps: z.int().min(1).max(1000).optional(),
});

export type AgentScope = 'deployment' | 'channel';

export interface AgentDefinition extends z.infer<typeof frontMatterSchema> {
  instructions: string;
  scope: AgentScope;
  /** Its AGENT.md's S3 key. */
  key: string;
}

export type ParsedAgent = { ok: true; agent: AgentDefinition } | { ok: false; error: string };

/** Where an agent named `name` is defined for a thread, the operator's place first. */
export function agentKeys(threadId: string, name: string): Record<AgentScope, string> {
  return { deployment: `agents/${name}/${AGENT_FILE}`, channel: `${dataKeys(threadId).channelDir}/agents/${name}/${AGENT_FILE}` };
}

/** The folders listed for `agents`: the operators' and the channel's. */
export const agentPrefixes = (threadId: string): Record<AgentScope, string> => ({
  deployment: 'agents/',
  channel: `${dataKeys(threadId).channelDir}/agents/`,
});

/** Every agent definition's key and error file's key, as IAM patterns (deployment's, then any channel's). */
export const AGENT_DEFINITIONS = {
  files: [`agents/*/${AGENT_FILE}`, `*/*/agents/*/${AGENT_FILE}`],
  errorFiles: ['agents/*/AGENT.error.json', '*/*/agents/*/AGENT.error.json'],
} as const;

/** Beside an invalid AGENT.md: what is wrong with it. */
export const agentErrorKey = (key: string): string => key.replace(/AGENT\.md$/, 'AGENT.error.json');

export function parseAgentFile(key: string, scope: AgentScope, text: string): ParsedAgent {
  const folder = key.split('/').at(-2) ?? '';
  try {
    const { yaml, rest } = splitFrontmatter(text);
    const parsed = frontMatterSchema.safeParse(parseYaml(yaml) ?? {});
    if (!parsed.success) throw new FrontMatterError(`its frontmatter is invalid: ${formatIssues(parsed.error)}`);
    if (parsed.data.name !== folder) throw new FrontMatterError(`name "${parsed.data.name}" does not match its folder name "${folder}"`);
    const instructions = rest.trim();
    if (!instructions) throw new FrontMatterError('it has no instructions (the Markdown after the frontmatter)');
    if (instructions.length > MAX_AGENT_INSTRUCTIONS_CHARS) {
      throw new FrontMatterError(
        `its instructions are ${instructions.length} characters, over the ${MAX_AGENT_INSTRUCTIONS_CHARS}-character limit`,
      );
    }
    return { ok: true, agent: { ...parsed.data, instructions, scope, key } };
  } catch (error) {
    if (error instanceof FrontMatterError) return { ok: false, error: `Agent ${key} was not loaded because ${error.message}.` };
    throw error;
  }
}
