import { KMSClient } from '@aws-sdk/client-kms';
import { once } from '../support/lazy.ts';

export const kmsClient = once(() => new KMSClient({}));
