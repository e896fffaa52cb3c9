import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { once } from '../lazy.ts';

export const schedulerClient = once(() => new SchedulerClient({}));
