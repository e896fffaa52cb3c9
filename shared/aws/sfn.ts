import { SFNClient } from '@aws-sdk/client-sfn';
import { once } from '../support/lazy.ts';

export const sfnClient = once(() => new SFNClient({}));
