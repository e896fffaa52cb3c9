// EventBridge event patterns, for the local rules (the default bus's rule on execution endings, the
// custom bus's rules): the subset of pattern syntax CDK rules use.
import { isPlainObject } from './aws-protocol.ts';

/**
 * Matches an event against an EventBridge event pattern: nested objects, arrays of allowed values
 * (an array in the event matches if any element does), and the prefix / suffix / wildcard /
 * equals-ignore-case / anything-but / exists operators. Any other operator throws, rather than
 * match wrongly.
 */
export function matchesEventPattern(pattern: object, event: object): boolean {
  const fields = event as Record<string, unknown>;
  return Object.entries(pattern).every(([key, rule]) => matchesField(rule, fields[key]));
}

function matchesField(rule: unknown, value: unknown): boolean {
  if (Array.isArray(rule)) return matchesAnyCondition(rule, value);
  if (!isPlainObject(rule)) throw new Error(`Invalid event pattern rule: ${JSON.stringify(rule)}`);
  if (value === undefined) return matchesEventPattern(rule, {});
  return isPlainObject(value) && matchesEventPattern(rule, value);
}

function matchesAnyCondition(conditions: unknown[], value: unknown): boolean {
  // A missing field only matches { exists: false }.
  if (value === undefined) return conditions.some((condition) => isPlainObject(condition) && condition.exists === false);
  const values = Array.isArray(value) ? value : [value];
  return conditions.some((condition) => values.some((item) => matchesCondition(condition, item)));
}

function matchesCondition(condition: unknown, value: unknown): boolean {
  if (!isPlainObject(condition)) return condition === value;
  const [operator, operand] = Object.entries(condition)[0] ?? [];
  switch (operator) {
    case 'exists':
      return operand === true;
    case 'prefix':
      return typeof value === 'string' && typeof operand === 'string' && value.startsWith(operand);
    case 'suffix':
      return typeof value === 'string' && typeof operand === 'string' && value.endsWith(operand);
    case 'equals-ignore-case':
      return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase() === operand.toLowerCase();
    case 'wildcard':
      return typeof value === 'string' && typeof operand === 'string' && wildcardRegExp(operand).test(value);
    case 'anything-but':
      return !matchesAnythingButOperand(operand, value);
    default:
      throw new Error(`Unsupported event pattern operator: ${JSON.stringify(condition)}`);
  }
}

function matchesAnythingButOperand(operand: unknown, value: unknown): boolean {
  if (Array.isArray(operand)) return operand.includes(value);
  if (isPlainObject(operand)) return matchesCondition(operand, value);
  return operand === value;
}

/** `*` matches any characters; `\*` is a literal star and `\\` a literal backslash. */
function wildcardRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '\\' && (pattern[i + 1] === '*' || pattern[i + 1] === '\\')) {
      source += `\\${pattern[++i]}`;
    } else {
      source += char === '*' ? '.*' : char.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`, 's');
}
