// EventBridge event patterns, for the local rules (the default bus's rule on execution endings, the
// custom bus's rules): the subset of pattern syntax CDK rules use.
import { isPlainObject } from './aws-protocol.ts';

/**
 * Matches an event against an EventBridge event pattern: nested objects, arrays of allowed values
 * (an array in the event matches if any element does), and the prefix / anything-but / exists
 * operators. Any other operator throws, rather than match wrongly.
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
