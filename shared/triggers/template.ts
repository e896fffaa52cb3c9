// A trigger's text and dedupe key are templates filled from the event: `{detail.alarmName}`,
// `{resources[0]}`, `{detail.object.key}`. A field the event does not have is shown, not fatal
// (`{detail.alarmName: missing}`), so a changed event shape produces a readable prompt instead of a
// crash; objects are shown as JSON. The result is capped so one huge field cannot make the prompt.
const PLACEHOLDER = /\{([A-Za-z0-9_$@-]+(?:(?:\.[A-Za-z0-9_$@-]+)|(?:\[\d+\]))*)\}/g;
const MAX_FIELD_CHARS = 2000;
export const MAX_FILLED_CHARS = 16_000;

function lookUp(value: unknown, path: string): { found: true; value: unknown } | { found: false } {
  let current = value;
  for (const part of path.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, part)) return { found: false };
    current = (current as Record<string, unknown>)[part];
  }
  return { found: true, value: current };
}

function show(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > MAX_FIELD_CHARS ? `${text.slice(0, MAX_FIELD_CHARS)}… (${text.length} characters)` : text;
}

export function fillTemplate(template: string, event: unknown): string {
  const filled = template.replace(PLACEHOLDER, (_, path: string) => {
    const hit = lookUp(event, path);
    return hit.found ? show(hit.value) : `{${path}: missing}`;
  });
  return filled.length > MAX_FILLED_CHARS ? `${filled.slice(0, MAX_FILLED_CHARS)}… (truncated)` : filled;
}
