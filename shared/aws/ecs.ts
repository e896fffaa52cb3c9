import { ECSClient } from '@aws-sdk/client-ecs';
import { once } from '../support/lazy.ts';

export const ecsClient = once(() => new ECSClient({}));
