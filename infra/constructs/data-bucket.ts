// The S3 bucket holding the agent's data tree: memory, skills, settings, thread contexts,
// attachments, event files. Its server access logs go to a second, log-only bucket.
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Effect, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { ROOT_KEYS } from '../../shared/ids.ts';

export class DataBucket extends Construct {
  readonly bucket: Bucket;
  readonly accessLogsBucket: Bucket;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    // S3 server access logging can deliver only to SSE-S3 buckets, hence S3_MANAGED on both.
    this.accessLogsBucket = new Bucket(this, 'AccessLogs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.bucket = new Bucket(this, 'Bucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      // Versioning keeps every edit of MEMORY.md, skills and contexts recoverable.
      versioned: true,
      lifecycleRules: [
        { id: 'expire-old-versions', noncurrentVersionExpiration: Duration.days(90) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
        // Long prompt texts are needed until their run has read them; the thread's log keeps them after.
        { id: 'expire-prompt-bodies', prefix: ROOT_KEYS.prompts, expiration: Duration.days(30) },
      ],
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'data/',
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}

/**
 * Read, write and delete objects, and list keys. Narrower than bucket.grantReadWrite(), whose
 * wildcard actions (s3:GetBucket*, s3:List*, s3:DeleteObject*, ...) reach bucket configuration and
 * object versions. ListBucket is needed so a missing key reads as 404 NoSuchKey rather than 403.
 */
export function grantObjectReadWrite(bucket: IBucket, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
      resources: [bucket.arnForObjects('*')],
    }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
  );
}

/**
 * Read keys that may not exist yet (settings.json on a fresh deployment): GetObject on exactly those
 * keys, and ListBucket, without which S3 answers a missing key with 403 AccessDenied instead of 404.
 */
export function grantOptionalRead(bucket: IBucket, grantee: IGrantable, keys: string[]): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:GetObject'], resources: keys.map((key) => bucket.arnForObjects(key)) }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
  );
}

/** Write keys under `prefix` (and nothing else: no read, list or delete). */
export function grantWriteUnder(bucket: IBucket, grantee: IGrantable, prefix: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:PutObject'], resources: [bucket.arnForObjects(`${prefix}*`)] }),
  );
}
