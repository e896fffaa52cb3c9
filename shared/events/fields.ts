// zod fields whose errors read as sentences about the field, for event files and everything that
// carries their target (firings, bus events).
import * as z from 'zod';

export const q = (s: string) => JSON.stringify(s);

export const typeName = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

/** A string field; `missing` says why it is needed when it is absent. */
export function stringField(field: string, missing: string) {
  return z.string({
    error: (iss) =>
      iss.input === undefined
        ? `"${field}" is missing${missing ? `: ${missing}` : ''}`
        : `"${field}" must be a string, not ${typeName(iss.input)}`,
  });
}
