// The task definitions the local ECS knows, as ECS keeps them: numbered revisions per family, each
// ACTIVE until deregistered (a CloudFormation deploy that replaces a task definition registers the
// new revision and then deregisters the old one). RunTask of a family alone runs its latest ACTIVE
// revision; a deregistered (INACTIVE) revision runs no new task.
import { ApiError } from '../aws-protocol.ts';

export interface TaskDefinitionRevision {
  arn: string;
  family: string;
  revision: number;
}

const FAMILY = '[A-Za-z0-9_-]{1,255}';
const REFERENCE = new RegExp(`^(?:arn:[^:]+:ecs:[^:]*:[^:]*:task-definition/(${FAMILY}):(\\d+)|(${FAMILY})(?::(\\d+))?)$`);

// ECS's answers: an unknown task definition is the client's error; an inactive one an invalid parameter.
const unknown = () => new ApiError('ClientException', 'Unable to describe task definition.');
const inactive = () => new ApiError('InvalidParameterException', 'TaskDefinition is inactive');

export function createTaskDefinitions(arnPrefix: string, families: readonly string[]) {
  // family → the status of each revision (index 0 is revision 1).
  const revisions = new Map<string, ('ACTIVE' | 'INACTIVE')[]>();
  const arnOf = (family: string, revision: number) => `${arnPrefix}:task-definition/${family}:${revision}`;

  /** RegisterTaskDefinition: the family's next revision, ACTIVE. */
  function register(family: string): TaskDefinitionRevision {
    if (!new RegExp(`^${FAMILY}$`).test(family)) throw new Error(`Not a task definition family: ${family}`);
    const statuses = revisions.get(family) ?? [];
    revisions.set(family, [...statuses, 'ACTIVE']);
    const revision = statuses.length + 1;
    return { arn: arnOf(family, revision), family, revision };
  }

  /** A family[:revision] or ARN reference, parsed; unknown when it is none. */
  function parse(reference: unknown): { family: string; revision?: number } {
    if (typeof reference !== 'string' || reference === '')
      throw new ApiError('InvalidParameterException', 'taskDefinition can not be blank.');
    const match = REFERENCE.exec(reference);
    if (!match) throw unknown();
    const [, arnFamily, arnRevision, family, revision] = match;
    const number = arnRevision ?? revision;
    return { family: (arnFamily ?? family)!, ...(number === undefined ? {} : { revision: Number(number) }) };
  }

  /** What RunTask runs: the revision named, if ACTIVE, or the family's latest ACTIVE one. */
  function resolveForRun(reference: unknown): TaskDefinitionRevision {
    const { family, revision } = parse(reference);
    const statuses = revisions.get(family);
    if (!statuses) throw unknown();
    if (revision === undefined) {
      const latest = statuses.lastIndexOf('ACTIVE') + 1;
      if (latest === 0) throw unknown();
      return { arn: arnOf(family, latest), family, revision: latest };
    }
    const status = statuses[revision - 1];
    if (status === undefined) throw unknown();
    if (status === 'INACTIVE') throw inactive();
    return { arn: arnOf(family, revision), family, revision };
  }

  /** DeregisterTaskDefinition: the revision turns INACTIVE (tasks running it go on). */
  function deregister(reference: string): void {
    const { family, revision } = parse(reference);
    const statuses = revisions.get(family);
    if (!statuses || revision === undefined || statuses[revision - 1] === undefined) throw unknown();
    statuses[revision - 1] = 'INACTIVE';
  }

  for (const family of families) register(family);
  return { register, resolveForRun, deregister };
}

export type TaskDefinitions = ReturnType<typeof createTaskDefinitions>;
