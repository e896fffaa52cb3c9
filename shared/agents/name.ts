// An agent's name, on its own so that settings.json's schema can check one without the AGENT.md parser.
import * as z from 'zod';

/** Lowercase letters, digits and single hyphens, as skill names. */
export const AGENT_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export const agentNameSchema = z
  .string()
  .max(64)
  .regex(AGENT_NAME, { error: 'must be lowercase letters, digits and single hyphens (at most 64)' });
