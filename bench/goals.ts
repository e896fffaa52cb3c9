// The goals issue 21 sets for the fast path, printed beside each figure so that a run says where it
// stands. Figures, not assertions: a goal missed on a noisy machine is reported, never failed.
const KB = 1024;

export const GOALS = {
  overheadPerStepMs: 60,
  /** Section 8, against the reference bot: added per model step, and whole-exchange ratios. */
  addedPerStepVsReferenceMs: 80,
  replyVsReference: 1.1,
  toolTurnVsReference: 1.08,
  awsCallsPerRun: 35,
  awsCallsPerModelStep: 5,
  webhookCallsPerMention: 6,
  toolCallOverheadMs: 35,
  /** S3 listings per tool call; none at all for a call that changed nothing. */
  s3ListsPerToolCall: 1,
  ackP99IsolatedMs: 50,
  ackP99BackToBackMs: 100,
  admittedPerSecond: 25,
  teamsWebhookBundleBytes: 1024 * KB,
  agentStepBundleBytes: 700 * KB,
} as const;

const verdict = (met: boolean) => (met ? 'met' : 'not met');

/** "≤ 60 ms: met" for a figure that must stay at or under its goal. */
export const atMost = (value: number, goal: number, shown: string): string => `≤ ${shown}: ${verdict(value <= goal)}`;

/** "≥ 25/s: not met" for a figure that must reach its goal. */
export const atLeast = (value: number, goal: number, shown: string): string => `≥ ${shown}: ${verdict(value >= goal)}`;

/** Several figures against their goals at once ("≤ 35 / ≤ 5: met / not met"). */
export const allAtMost = (pairs: [value: number, goal: number, shown: string][]): string =>
  `${pairs.map(([, , shown]) => `≤ ${shown}`).join(' / ')}: ${pairs.map(([value, goal]) => verdict(value <= goal)).join(' / ')}`;
