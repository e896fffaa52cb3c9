// The model a run calls (over the deployment's BEDROCK_MODEL_ID), also per channel.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

const modelChoice = z.object({
  id: z.string().min(1).optional(),
  maxOutputTokens: z.number().int().positive().max(128_000).optional(),
  temperature: z.number().min(0).max(1).optional(),
});

export const modelSettings = settingsGroup({
  keys: { model: modelChoice.default({}) },
  channel: { model: modelChoice.optional() },
});
