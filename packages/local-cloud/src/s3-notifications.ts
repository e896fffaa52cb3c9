// S3 event notifications for the local S3 (fauxqs has none): a poller that lists the bucket under
// each configuration's prefix with ListObjectsV2, diffs keys and ETags (and LastModified, so an
// identical re-upload counts) against what it last delivered, and delivers one notification per
// change in the real shape (eventVersion 2.1, ObjectCreated:Put / ObjectRemoved:Delete, the key
// URL-encoded as S3 encodes it: shared/aws/s3-event-keys.ts).
//
// Delivery semantics: real S3 notifications are pushed, at least once, and unordered (two changes
// to one key may arrive in either order, and a change may arrive twice). This poller is at least
// once too, and ordered within a poll (key order, per configuration): a failed delivery goes to
// onError and the change is delivered again on the next poll, as the key then is (several changes
// to a key between two polls arrive as one, the newest). Objects present when it starts are not
// notified, as a configuration added to a bucket does not notify what the bucket already holds.
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { S3Event, S3EventRecord } from 'aws-lambda';
import { encodeS3EventKey } from '../../../shared/aws/s3-event-keys.ts';

export interface S3NotificationConfiguration {
  /** s3.configurationId in the records. Default notification-<index>. */
  id?: string;
  prefix?: string;
  suffix?: string;
  /** e.g. ['s3:ObjectCreated:*', 's3:ObjectRemoved:*'] (or ...:Put, ...:Delete). */
  events: string[];
  deliver(event: S3Event): Promise<void>;
}

export interface S3NotificationsOptions {
  s3: S3Client;
  bucket: string;
  configurations: S3NotificationConfiguration[];
  /** Default 250. */
  intervalMs?: number;
  /** awsRegion in the records. Default: the S3 client's region. */
  region?: string;
  /** A listing or a delivery failed (the delivery is retried on the next poll). */
  onError?(error: unknown): void;
}

export interface S3Notifications {
  /** Detects changes now and delivers them, awaiting the deliveries. */
  poll(): Promise<void>;
  stop(): Promise<void>;
}

type ChangeName = 'ObjectCreated:Put' | 'ObjectCreated:CompleteMultipartUpload' | 'ObjectRemoved:Delete';

const SUPPORTED_EVENTS = new Set([
  's3:ObjectCreated:*',
  's3:ObjectCreated:Put',
  's3:ObjectCreated:Post',
  's3:ObjectCreated:Copy',
  's3:ObjectCreated:CompleteMultipartUpload',
  's3:ObjectRemoved:*',
  's3:ObjectRemoved:Delete',
  's3:ObjectRemoved:DeleteMarkerCreated',
]);

interface ListedObject {
  key: string;
  eTag: string;
  size: number;
  lastModified: Date | undefined;
  /** What a change is detected by. */
  signature: string;
}

interface ConfigurationState {
  configuration: S3NotificationConfiguration;
  id: string;
  /** What was last delivered (or present at start), by key, as signatures. */
  known: Map<string, string>;
}

export async function startS3Notifications(options: S3NotificationsOptions): Promise<S3Notifications> {
  for (const configuration of options.configurations) {
    if (configuration.events.length === 0) throw new Error('An S3 notification configuration needs at least one event');
    for (const event of configuration.events) {
      if (!SUPPORTED_EVENTS.has(event)) throw new Error(`Unsupported S3 notification event type for the local poller: ${event}`);
    }
  }
  const region = options.region ?? (await options.s3.config.region());
  const bucketArn = `arn:aws:s3:::${options.bucket}`;
  const states: ConfigurationState[] = options.configurations.map((configuration, index) => ({
    configuration,
    id: configuration.id ?? `notification-${index}`,
    known: new Map(),
  }));
  const listPrefixes = coveringPrefixes(options.configurations.map((configuration) => configuration.prefix ?? ''));
  const report = (error: unknown) => (options.onError ? options.onError(error) : console.error('[s3-notifications]', error));
  let sequence = BigInt(Date.now()) * 1_000_000n;

  async function listBucket(): Promise<Map<string, ListedObject>> {
    const objects = new Map<string, ListedObject>();
    for (const prefix of listPrefixes) {
      let token: string | undefined;
      do {
        const page = await options.s3.send(
          new ListObjectsV2Command({ Bucket: options.bucket, Prefix: prefix === '' ? undefined : prefix, ContinuationToken: token }),
        );
        for (const object of page.Contents ?? []) {
          if (object.Key === undefined) continue;
          const eTag = (object.ETag ?? '').replaceAll('"', '');
          const lastModified = object.LastModified;
          objects.set(object.Key, {
            key: object.Key,
            eTag,
            size: object.Size ?? 0,
            lastModified,
            signature: `${eTag}|${lastModified?.getTime() ?? ''}`,
          });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    }
    return objects;
  }

  // S3 matches filter rules against the key as its events carry it (a space in a rule is written '+').
  function selected(configuration: S3NotificationConfiguration, key: string): boolean {
    const encoded = encodeS3EventKey(key);
    return encoded.startsWith(configuration.prefix ?? '') && encoded.endsWith(configuration.suffix ?? '');
  }

  function wanted(configuration: S3NotificationConfiguration, eventName: ChangeName): boolean {
    const full = `s3:${eventName}`;
    return configuration.events.some((event) => event === full || (event.endsWith(':*') && full.startsWith(event.slice(0, -1))));
  }

  function record(state: ConfigurationState, eventName: ChangeName, key: string, object: ListedObject | undefined): S3EventRecord {
    sequence += 1n;
    return {
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: region,
      eventTime: (object?.lastModified ?? new Date()).toISOString(),
      eventName,
      userIdentity: { principalId: 'local' },
      requestParameters: { sourceIPAddress: '127.0.0.1' },
      responseElements: {
        'x-amz-request-id': randomBytes(8).toString('hex').toUpperCase(),
        'x-amz-id-2': randomBytes(48).toString('base64'),
      },
      s3: {
        s3SchemaVersion: '1.0',
        configurationId: state.id,
        bucket: { name: options.bucket, ownerIdentity: { principalId: 'local' }, arn: bucketArn },
        // S3 sends no size or eTag for a deletion.
        object: (object
          ? { key: encodeS3EventKey(key), size: object.size, eTag: object.eTag, sequencer: sequence.toString(16).toUpperCase() }
          : { key: encodeS3EventKey(key), sequencer: sequence.toString(16).toUpperCase() }) as S3EventRecord['s3']['object'],
      },
    };
  }

  async function deliverChanges(state: ConfigurationState, current: Map<string, ListedObject>): Promise<void> {
    const { configuration, known } = state;
    const keys = new Set([...known.keys(), ...[...current.keys()].filter((key) => selected(configuration, key))]);
    for (const key of [...keys].sort(compareKeys)) {
      const latest = current.get(key);
      const before = known.get(key);
      if (latest !== undefined && latest.signature === before) continue;
      if (latest === undefined && before === undefined) continue;
      // A multipart upload's ETag ends in -<part count>.
      const eventName: ChangeName =
        latest === undefined
          ? 'ObjectRemoved:Delete'
          : /-\d+$/.test(latest.eTag)
            ? 'ObjectCreated:CompleteMultipartUpload'
            : 'ObjectCreated:Put';
      if (wanted(configuration, eventName)) {
        try {
          await configuration.deliver({ Records: [record(state, eventName, key, latest)] });
        } catch (error) {
          report(error);
          continue; // not recorded as known: delivered again next poll
        }
      }
      if (latest === undefined) known.delete(key);
      else known.set(key, latest.signature);
    }
  }

  async function pollOnce(): Promise<void> {
    const current = await listBucket();
    for (const state of states) await deliverChanges(state, current);
  }

  // What is there at start is the baseline.
  const initial = await listBucket();
  for (const state of states) {
    for (const [key, object] of initial) if (selected(state.configuration, key)) state.known.set(key, object.signature);
  }

  let chain: Promise<void> = Promise.resolve();
  function poll(): Promise<void> {
    const run = chain.then(pollOnce);
    chain = run.catch(() => undefined);
    return run;
  }

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void poll().catch(report).finally(schedule);
    }, options.intervalMs ?? 250);
  };
  schedule();

  return {
    poll,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await chain;
    },
  };
}

/** The fewest prefixes whose listings cover every configuration's ('' covers everything). */
function coveringPrefixes(prefixes: string[]): string[] {
  const sorted = [...new Set(prefixes)].sort((a, b) => a.length - b.length);
  const covering: string[] = [];
  for (const prefix of sorted) if (!covering.some((shorter) => prefix.startsWith(shorter))) covering.push(prefix);
  return covering;
}

/** By UTF-8 bytes, as S3 orders keys. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
