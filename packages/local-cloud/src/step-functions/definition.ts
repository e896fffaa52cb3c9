// The state machine definition as aws-local-stepfunctions should run it locally.

export type AnyState = Record<string, unknown> & { Type?: string };
export type Machine = { States?: Record<string, AnyState>; TimeoutSeconds?: number };

// setTimeout overflows (fires at once) past 2^31-1 ms.
const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1000);

// State names are unique across a whole state machine (ASL rule), Map/Parallel branches included,
// which is what makes the library's name-keyed overrides safe.
export function forEachState(machine: Machine, visit: (name: string, state: AnyState) => void): void {
  for (const [name, state] of Object.entries(machine.States ?? {})) {
    visit(name, state);
    const iterator = (state.ItemProcessor ?? state.Iterator) as Machine | undefined;
    if (iterator) forEachState(iterator, visit);
    for (const branch of (state.Branches ?? []) as Machine[]) forEachState(branch, visit);
  }
}

/**
 * aws-local-stepfunctions gives every Task state without TimeoutSeconds a 60 s timeout (AWS: none,
 * the Lambda's own timeout applies), and Node timers overflow past ~24.8 days. Make the implicit
 * timeout effectively infinite and clamp the explicit ones.
 */
export function localizedDefinition(source: object): Machine {
  const definition = structuredClone(source) as Machine;
  if ((definition.TimeoutSeconds ?? 0) > MAX_TIMER_SECONDS) delete definition.TimeoutSeconds;
  forEachState(definition, (_name, state) => {
    if (state.Type === 'Task' && isCallbackTask(state)) moveTimeoutIntoParameters(state);
    if (state.Type !== 'Task' || state.TimeoutSecondsPath !== undefined) return;
    state.TimeoutSeconds = Math.min(Number(state.TimeoutSeconds ?? MAX_TIMER_SECONDS), MAX_TIMER_SECONDS);
  });
  return definition;
}

/** Every Retry wait overridden (by state name), so failure tests are fast. */
export function retryOverrides(definition: Machine, retryIntervalMs: number | undefined): Record<string, number> {
  const overrides: Record<string, number> = {};
  if (retryIntervalMs === undefined) return overrides;
  forEachState(definition, (name, state) => {
    if (Array.isArray(state.Retry)) overrides[name] = retryIntervalMs;
  });
  return overrides;
}

/** A Task whose integration waits for SendTaskSuccess / SendTaskFailure with its `$$.Task.Token`. */
export const isCallbackTask = (state: AnyState): boolean => String(state.Resource).endsWith('.waitForTaskToken');

/** Where a callback task's timeout travels to its local handler (see moveTimeoutIntoParameters). */
export const CALLBACK_TIMEOUT_PARAMETER = '__localCallbackTimeoutSeconds';

/**
 * The library evaluates TimeoutSecondsPath against the Parameters' output, AWS against the state's
 * input, and its own timer cannot end a wait for a token (the token would stay answerable). So a
 * callback task's timeout is handed to its handler: as a Parameters field the library evaluates
 * against the state's input, as AWS evaluates the path; the handler removes it before the call.
 */
function moveTimeoutIntoParameters(state: AnyState): void {
  const parameters = (state.Parameters ?? {}) as Record<string, unknown>;
  if (state.TimeoutSecondsPath !== undefined) parameters[`${CALLBACK_TIMEOUT_PARAMETER}.$`] = state.TimeoutSecondsPath;
  else if (state.TimeoutSeconds !== undefined) parameters[CALLBACK_TIMEOUT_PARAMETER] = state.TimeoutSeconds;
  state.Parameters = parameters;
  delete state.TimeoutSecondsPath;
  state.TimeoutSeconds = MAX_TIMER_SECONDS;
}
