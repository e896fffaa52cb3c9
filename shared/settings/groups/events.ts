// Bounds on the agent's own events: how far runs may start runs through event files, how many event
// files a channel may keep and one run may save, how many periodic ones the agent may keep in a
// channel and for how many days without a person's reply they keep firing, and how often a periodic
// one may fire.
import * as z from 'zod';
import { DEFAULT_MIN_EVENT_INTERVAL_MINUTES } from '../../defaults.ts';
import { settingsGroup } from '../group.ts';

export const EVENT_DEFAULTS = {
  maxEventChainDepth: 3,
  maxEventFilesPerChannel: 50,
  maxEventFilesPerRun: 5,
  maxAgentPeriodicEventsPerChannel: 5,
  agentPeriodicEventDays: 7,
  minEventIntervalMinutes: DEFAULT_MIN_EVENT_INTERVAL_MINUTES,
};

export const eventSettings = settingsGroup({
  keys: {
    /** Events written by runs that events started stop being run past this depth (0: runs never start runs). */
    maxEventChainDepth: z.number().int().min(0).max(20).default(EVENT_DEFAULTS.maxEventChainDepth),
    /** Event files one channel's folder may hold (error files aside); more are refused. */
    maxEventFilesPerChannel: z.number().int().positive().max(1_000).default(EVENT_DEFAULTS.maxEventFilesPerChannel),
    /** Event files one run may save from its sandbox (each save counts); more get an error file instead. */
    maxEventFilesPerRun: z.number().int().min(0).max(100).default(EVENT_DEFAULTS.maxEventFilesPerRun),
    /** Periodic event files the agent may keep in one channel's folder (operators' files aside). */
    maxAgentPeriodicEventsPerChannel: z.number().int().min(0).max(100).default(EVENT_DEFAULTS.maxAgentPeriodicEventsPerChannel),
    /** Days an agent's periodic event file keeps firing after it was saved or a person last replied in one of its threads. */
    agentPeriodicEventDays: z.number().int().min(1).max(365).default(EVENT_DEFAULTS.agentPeriodicEventDays),
    /** Periodic event files whose cron fires closer together than this are refused (1 to 60 minutes). */
    minEventIntervalMinutes: z.number().int().min(1).max(60).default(EVENT_DEFAULTS.minEventIntervalMinutes),
  },
});
