// The names the stack derives from its stack name (the stackName context), in one place, with the
// AWS limit each must fit. The constructs name things through derivedName(), and the stack checks its
// name against the tightest limit before building anything, so a name that is too long fails the synth
// with the reason instead of failing a deploy halfway.
import { PLATFORM_DESCRIPTORS, type PlatformName } from '../shared/platforms/descriptors.ts';

/** The stack's name when the stackName context is not set. */
export const DEFAULT_STACK_NAME = 'Threadwork';

interface DerivedName {
  /** What the name is, for the error message. */
  readonly what: string;
  readonly maxLength: number;
  readonly of: (stackName: string) => string;
}

/** Each chat platform's secret (infra/constructs/chat-secrets.ts): `<stack>/<Title>Credentials`. */
const chatSecretNames = Object.fromEntries(
  PLATFORM_DESCRIPTORS.map(({ name, title }) => [
    `${name}Secret`,
    { what: `the ${title} secret name`, maxLength: 512, of: (s: string) => `${s}/${title}Credentials` },
  ]),
) as Record<`${PlatformName}Secret`, DerivedName>;

export const DERIVED_NAMES = {
  stack: { what: 'the CloudFormation stack name', maxLength: 128, of: (s: string) => s },
  schedulerFunction: { what: 'the scheduler Lambda function name', maxLength: 64, of: (s: string) => `${s}-Scheduler` },
  scheduleGroup: { what: 'the EventBridge Scheduler schedule group name', maxLength: 64, of: (s: string) => `${s}-events` },
  eventBus: { what: 'the EventBridge event bus name', maxLength: 256, of: (s: string) => `${s}-events` },
  stateMachine: { what: 'the agent-run state machine name', maxLength: 80, of: (s: string) => `${s}-AgentRun` },
  stateMachineLogGroup: {
    what: "the state machine's log group name",
    maxLength: 512,
    // Step Functions' vended logs prefix: such groups need no CloudWatch Logs resource policy entry.
    of: (s: string) => `/aws/vendedlogs/states/${s}-AgentRun`,
  },
  ...chatSecretNames,
} as const satisfies Record<string, DerivedName>;

export type DerivedNameKey = keyof typeof DERIVED_NAMES;

export function derivedName(key: DerivedNameKey, stackName: string): string {
  return DERIVED_NAMES[key].of(stackName);
}

// CloudFormation stack names; every derived name allows these characters too.
const STACK_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9-]*$/;

/** The longest stack name every derived name fits, and the name that sets that limit. */
export function stackNameLimit(): { readonly maxLength: number; readonly by: DerivedName } {
  const limits = Object.values(DERIVED_NAMES).map((name) => ({ maxLength: name.maxLength - name.of('').length, by: name }));
  return limits.reduce((tightest, limit) => (limit.maxLength < tightest.maxLength ? limit : tightest));
}

export function checkStackName(stackName: string): void {
  if (!STACK_NAME_PATTERN.test(stackName)) {
    throw new Error(`stackName must start with a letter and contain only letters, digits and hyphens; got ${JSON.stringify(stackName)}`);
  }
  const { maxLength, by } = stackNameLimit();
  if (stackName.length > maxLength) {
    throw new Error(
      `stackName ${JSON.stringify(stackName)} is ${stackName.length} characters; it can have at most ${maxLength}, because ${by.what} ` +
        `(${JSON.stringify(by.of(stackName))}) is limited to ${by.maxLength} characters`,
    );
  }
}
