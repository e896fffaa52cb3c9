// A skill's `allowed-tools`, enforced. When every skill offered for a message declares the field,
// the run may use only the tools they list together (a skill without the field allows everything,
// so one such skill lifts the limit). Names are the run's tools, case-insensitive (`Bash`,
// `read`); `Bash(git log:*)` allows bash commands starting with `git log`, `Bash(npm test)` that
// exact command, either only as one plain command (no `;`, `&`, `|`, `$`, backticks, redirections,
// parentheses or braces); names of tools the run does not have allow nothing.

export interface ToolPolicy {
  /** The skills whose lists make the policy, for the refusal message. */
  skills: string[];
  /** Tools allowed without a restriction on their input. */
  tools: string[];
  /** When bash is not in `tools`: the commands allowed, as prefixes (`git log`) or exact commands. */
  bash: { prefix?: string; exact?: string }[];
}

/** The policy of the offered skills over the run's tools, or undefined when one of them (or none) declares nothing. */
export function toolPolicyFor(skills: { name: string; allowedTools: string[] }[], toolNames: readonly string[]): ToolPolicy | undefined {
  const toolNamed = (name: string) => toolNames.find((tool) => tool.toLowerCase() === name.toLowerCase());
  if (skills.length === 0 || skills.some((skill) => skill.allowedTools.length === 0)) return undefined;
  const policy: ToolPolicy = { skills: skills.map((s) => s.name), tools: [], bash: [] };
  for (const entry of skills.flatMap((skill) => skill.allowedTools)) {
    const pattern = /^([A-Za-z_]+)\((.*)\)$/s.exec(entry.trim());
    const tool = toolNamed(pattern ? pattern[1]! : entry.trim());
    if (!tool) continue;
    if (pattern && tool === 'bash') {
      const command = pattern[2]!.trim();
      policy.bash.push(command.endsWith(':*') ? { prefix: command.slice(0, -2) } : { exact: command });
    } else if (!policy.tools.includes(tool)) {
      policy.tools.push(tool);
    }
  }
  return policy;
}

/** Why the call is not allowed by the policy, or undefined when it is. */
export function toolCallRefusal(policy: ToolPolicy | undefined, name: string, input: Record<string, unknown>): string | undefined {
  if (!policy) return undefined;
  if (policy.tools.includes(name)) return undefined;
  const command = typeof input.command === 'string' ? input.command.trim() : undefined;
  // A pattern allows one plain command: operators, substitutions and redirections would chain others.
  if (name === 'bash' && command !== undefined && !/[;&|`$<>\n\\(){}]/.test(command)) {
    const allowed = policy.bash.some((rule) =>
      rule.exact !== undefined ? command === rule.exact : command === rule.prefix || command.startsWith(`${rule.prefix} `),
    );
    if (allowed) return undefined;
  }
  const listed = [...policy.tools, ...policy.bash.map((rule) => `bash(${rule.exact ?? `${rule.prefix} …`})`)];
  return (
    `not run: the skill${policy.skills.length === 1 ? '' : 's'} ${policy.skills.join(', ')} in use allow${policy.skills.length === 1 ? 's' : ''} ` +
    `only ${listed.length ? listed.join(', ') : 'no tools'} (allowed-tools in SKILL.md)`
  );
}
