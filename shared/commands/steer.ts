// `steer <text>` (or `/steer <text>`, the /steer slash command): the text reaches the running run
// at its next tool boundary, under its sender's name, like any message.
import { MAX_STEER_BYTES, steerThread } from '../run/control.ts';
import { MAX_PENDING_STEERS } from '../run/actor.ts';
import { contextText } from '../context/context-text.ts';
import { defineCommand } from './command.ts';

const NOTHING_TO_STEER = 'Nothing is running here, so there is nothing to steer. Send it as a normal message instead.';

const STEERED = {
  queued: "Got it: I'll take that into account after the current step.",
  idle: NOTHING_TO_STEER,
  'too-long': `Steering is for short course corrections (at most ${MAX_STEER_BYTES / 1024} KB). Send longer instructions as a normal message: it runs after the current one.`,
  full: `${MAX_PENDING_STEERS} steering messages are already waiting for the next step. Wait for it, or stop the run.`,
};

export const steerCommand = defineCommand({
  name: 'steer',
  parse(text) {
    const steering = /^\/?steer\s+([\s\S]+)$/i.exec(text)?.[1]?.trim();
    return steering ? { text: steering } : undefined;
  },
  runsAt: 'webhook',
  who: 'requester',
  slash: { command: '/steer', hint: 'what to do differently' },
  async answer({ args, name, threadId, run }, deps) {
    if (!threadId || !run) return { text: NOTHING_TO_STEER };
    return { text: STEERED[await steerThread(deps.control, threadId, contextText(name, args.text), run.runId)] };
  },
});
