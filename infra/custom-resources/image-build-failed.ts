// EventBridge target: a sandbox image build that ended without succeeding fails its custom resource
// at once, with the build's log link, instead of leaving CloudFormation waiting.
//
// deploy-time-build's function only starts the CodeBuild build; the build itself answers
// CloudFormation, from its buildspec's post_build phase, with the response URL it was given as an
// environment variable. A build that never gets there (it fails while provisioning or queued, times
// out, or is stopped) answers nothing, and CloudFormation would wait until the custom resource's
// service timeout. CodeBuild's "Build State Change" event carries the build's environment
// variables, response URL included, and its log link; this answers FAILED with them. When the
// buildspec did answer (a failure in its build phase), this second FAILED changes nothing.
import type { EventBridgeEvent } from 'aws-lambda';
import * as z from 'zod';
import { parseOrThrow } from '../../shared/support/validation.ts';

/** Build statuses that mean the build is over without an image (the rule matches every other one). */
export const BUILD_RUNNING_OR_SUCCEEDED = ['IN_PROGRESS', 'SUCCEEDED'] as const;

// CloudFormation keeps a reason up to this size; a longer one would lose the log link at its end.
const MAX_PHASE_CONTEXT = 400;

const buildStateChange = z.object({
  'build-status': z.string(),
  'project-name': z.string(),
  'build-id': z.string(),
  'current-phase': z.string().optional(),
  'additional-information': z.object({
    environment: z.object({
      'environment-variables': z.array(z.object({ name: z.string(), value: z.string() })),
    }),
    logs: z.object({ 'deep-link': z.string().optional() }).optional(),
    phases: z
      .array(z.object({ 'phase-type': z.string(), 'phase-status': z.string().optional(), 'phase-context': z.array(z.string()).optional() }))
      .optional(),
  }),
});

export type BuildStateChange = z.infer<typeof buildStateChange>;

/** What CloudFormation's response URL expects (a custom resource response). */
export interface CustomResourceResponse {
  Status: 'FAILED';
  Reason: string;
  PhysicalResourceId: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
}

/** The response to send for a failed build, or undefined if the build was not started for a custom resource. */
export function failureResponse(detail: BuildStateChange): { url: string; body: CustomResourceResponse } | undefined {
  const variables = new Map(detail['additional-information'].environment['environment-variables'].map((v) => [v.name, v.value]));
  const [url, stackId, requestId, logicalResourceId, imageTag] = [
    'responseURL',
    'stackId',
    'requestId',
    'logicalResourceId',
    'imageTag',
  ].map((name) => variables.get(name));
  if (!url || !stackId || !requestId || !logicalResourceId) return undefined;
  const failedPhase = detail['additional-information'].phases?.find((p) => p['phase-status'] && p['phase-status'] !== 'SUCCEEDED');
  const phase = failedPhase?.['phase-type'] ?? detail['current-phase'] ?? 'unknown phase';
  const context = (failedPhase?.['phase-context'] ?? []).filter(Boolean).join(' ').slice(0, MAX_PHASE_CONTEXT);
  const link = detail['additional-information'].logs?.['deep-link'];
  const reason =
    `The sandbox image build ${detail['build-id']} ended ${detail['build-status']} in ${phase}` +
    (context ? ` (${context})` : '') +
    `. Build log: ${link ?? `CodeBuild project ${detail['project-name']}, build ${detail['build-id']}`}`;
  return {
    url,
    body: {
      Status: 'FAILED',
      Reason: reason,
      // The id the buildspec would have answered with; CloudFormation needs one even for a failure.
      PhysicalResourceId: imageTag || detail['build-id'],
      StackId: stackId,
      RequestId: requestId,
      LogicalResourceId: logicalResourceId,
    },
  };
}

/** Sends the failure to CloudFormation's response URL (a presigned S3 PUT: no content type). */
export async function reportFailedBuild(detail: BuildStateChange, put: typeof fetch = fetch): Promise<CustomResourceResponse | undefined> {
  const response = failureResponse(detail);
  if (!response) {
    console.log(JSON.stringify({ msg: 'build not started by a custom resource; nothing to answer', buildId: detail['build-id'] }));
    return undefined;
  }
  const body = JSON.stringify(response.body);
  const answer = await put(response.url, { method: 'PUT', body, headers: { 'Content-Type': '' } });
  if (!answer.ok) throw new Error(`CloudFormation's response URL answered ${answer.status}: ${await answer.text()}`);
  console.log(JSON.stringify({ msg: 'reported the failed image build', buildId: detail['build-id'], reason: response.body.Reason }));
  return response.body;
}

export async function handler(event: EventBridgeEvent<'CodeBuild Build State Change', unknown>): Promise<void> {
  await reportFailedBuild(parseOrThrow(buildStateChange, event.detail, 'CodeBuild Build State Change', 'InvalidBuildEvent'));
}
