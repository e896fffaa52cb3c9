// Where the functions reach AWS: one front door per service, before the emulator or stand-in that
// serves it, so every call is authorized as the calling function's role and recorded.
import { startFrontDoor, type AwsCall, type FrontDoor } from '../front-door/index.ts';
import type { LocalIam } from '../iam/index.ts';

/** The AWS_ENDPOINT_URL_<SERVICE> variable of each service the functions call, and who serves it. */
export type ServiceUpstreams = Record<
  'DYNAMODB' | 'S3' | 'SQS' | 'SFN' | 'ECS' | 'SCHEDULER' | 'EVENTBRIDGE' | 'SECRETS_MANAGER' | 'KMS' | 'LAMBDA',
  string
>;

export interface AwsEndpoints {
  /** AWS_ENDPOINT_URL_<SERVICE> → the front door's URL. */
  variables: Record<string, string>;
  /** Every call through a front door, in order. */
  calls: AwsCall[];
  close(): Promise<void>;
}

export async function startAwsEndpoints(upstreams: ServiceUpstreams, iam: () => LocalIam): Promise<AwsEndpoints> {
  const calls: AwsCall[] = [];
  const doors = new Map<string, Promise<FrontDoor>>();
  const variables: Record<string, string> = {};
  for (const [service, upstream] of Object.entries(upstreams)) {
    // One door per upstream: S3 and SQS share fauxqs, and the credential scope tells them apart.
    let door = doors.get(upstream);
    if (!door) {
      door = startFrontDoor({ upstream, iam, onCall: (call) => calls.push(call) });
      doors.set(upstream, door);
    }
    variables[`AWS_ENDPOINT_URL_${service}`] = (await door).endpoint;
  }
  return {
    variables,
    calls,
    async close() {
      await Promise.allSettled([...doors.values()].map(async (door) => (await door).close()));
    },
  };
}
