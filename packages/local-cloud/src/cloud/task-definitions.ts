// What a deploy does to the stack's ECS task definitions. CloudFormation replaces one whose
// properties changed (a new sandbox image, size or role): it registers the family's next revision,
// and once the stack update is done it deregisters the revision it replaced, which then runs no new
// task. One left unchanged keeps its revision. The first deploy's revisions (1) are the ones the
// local ECS registers when it starts.
import { isDeepStrictEqual } from 'node:util';
import type { LocalEcs } from '../ecs/index.ts';
import { LOCAL_REVISION_PROPERTY, localPhysicalName, resolveCloudFormation } from '../resources.ts';
import { resourcesOfType, type Template } from './resources.ts';

/** The template's task definition families: what the local ECS registers at start. */
export function taskDefinitionFamilies(template: Template): string[] {
  return resourcesOfType(template, 'AWS::ECS::TaskDefinition').map(([id]) => localPhysicalName(template, id));
}

/**
 * Registers what `next` replaces or adds (recording each revision in the template, as Ref yields
 * it) and returns the clean-up step: deregistering the revisions replaced or removed.
 */
export function deployTaskDefinitions(
  ecs: Pick<LocalEcs, 'registerTaskDefinition' | 'deregisterTaskDefinition'>,
  next: Template,
  previous: Template | undefined,
): () => void {
  if (!previous) return () => undefined;
  const retired: string[] = [];
  for (const [id, definition] of resourcesOfType(next, 'AWS::ECS::TaskDefinition')) {
    const before = previous.Resources[id];
    const { [LOCAL_REVISION_PROPERTY]: revision, ...properties } = (before?.Properties ?? {}) as Record<string, unknown>;
    if (before && isDeepStrictEqual(properties, definition.Properties)) {
      definition.Properties[LOCAL_REVISION_PROPERTY] = revision;
      continue;
    }
    const arn = ecs.registerTaskDefinition(localPhysicalName(next, id));
    definition.Properties[LOCAL_REVISION_PROPERTY] = Number(arn.slice(arn.lastIndexOf(':') + 1));
    if (before) retired.push(String(resolveCloudFormation(previous, { Ref: id })));
  }
  for (const [id] of resourcesOfType(previous, 'AWS::ECS::TaskDefinition')) {
    if (!next.Resources[id]) retired.push(String(resolveCloudFormation(previous, { Ref: id })));
  }
  return () => {
    for (const arn of retired) ecs.deregisterTaskDefinition(arn);
  };
}
