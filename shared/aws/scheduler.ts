import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { once } from '../support/lazy.ts';

export const schedulerClient = once(() => new SchedulerClient({}));
