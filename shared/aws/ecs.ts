import { ECSClient } from '@aws-sdk/client-ecs';
import { once } from '../lazy.ts';

export const ecsClient = once(() => new ECSClient({}));
