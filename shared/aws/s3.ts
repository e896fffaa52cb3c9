import { S3Client } from '@aws-sdk/client-s3';
import { once } from '../support/lazy.ts';

// Path-style addressing where the local cloud asks for it (its S3 has no per-bucket host names).
export const s3Client = once(() => new S3Client({ forcePathStyle: process.env.AWS_S3_FORCE_PATH_STYLE === 'true' }));
