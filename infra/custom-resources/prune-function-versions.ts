// Custom resource handler (Provider framework): on every deploy that publishes a version of the
// functions whose versions are retained (a run invokes the versions it started with until it ends),
// deletes the versions no run can still be using, so they do not pile up forever:
//
//   kept     the newest `keepLatest` versions, and every version replaced less than
//            `keepSupersededMinutes` ago (a run started on it may still be going: the setting is
//            twice the longest run, runTimeoutMinutes)
//   deleted  the others: DeleteFunction with the version as Qualifier (never the function itself)
//
// A version was replaced when the next one was published, so its age is counted from then, not
// from its own publication: a version that stayed current for months is as young as its last run.
// Pruning never fails a deploy: what cannot be listed or deleted now is logged, and the next
// deploy tries again. Delete (the stack going away) does nothing: the functions go with their versions.
import { DeleteFunctionCommand, LambdaClient, ListVersionsByFunctionCommand } from '@aws-sdk/client-lambda';
import type { CdkCustomResourceEvent, CdkCustomResourceResponse } from 'aws-lambda';

/** The custom resource's properties (CloudFormation passes numbers as strings). */
export interface PruneFunctionVersionsProperties {
  readonly functionNames: string[];
  /** The functions' current versions: a deploy that publishes one changes them, and so runs the pruning. */
  readonly currentVersions: string[];
  readonly keepLatest: string;
  readonly keepSupersededMinutes: string;
}

export interface PrunePolicy {
  readonly keepLatest: number;
  readonly keepSupersededMs: number;
  /** Epoch ms. */
  readonly now: number;
}

export interface PublishedVersion {
  readonly version: string;
  /** When it was published (epoch ms). */
  readonly publishedAt: number;
}

export interface PruneOutcome {
  readonly functionName: string;
  readonly deleted: string[];
  readonly failed: { version: string; error: string }[];
}

const PHYSICAL_ID = 'function-version-pruning';
const lambda = new LambdaClient({});

export async function handler(event: CdkCustomResourceEvent<PruneFunctionVersionsProperties>): Promise<CdkCustomResourceResponse> {
  if (event.RequestType !== 'Delete') {
    const outcomes = await pruneFunctionVersions(lambda, event.ResourceProperties, Date.now());
    console.log(JSON.stringify({ msg: 'pruned function versions', outcomes }));
  }
  return { PhysicalResourceId: PHYSICAL_ID };
}

/** Prunes each function's versions by the properties' policy; one function's failure does not stop the others. */
export async function pruneFunctionVersions(
  client: Pick<LambdaClient, 'send'>,
  properties: PruneFunctionVersionsProperties,
  now: number,
): Promise<PruneOutcome[]> {
  const policy: PrunePolicy = {
    keepLatest: Number(properties.keepLatest),
    keepSupersededMs: Number(properties.keepSupersededMinutes) * 60_000,
    now,
  };
  if (!Number.isInteger(policy.keepLatest) || policy.keepLatest < 1 || !(policy.keepSupersededMs >= 0)) {
    throw new Error(
      `invalid pruning policy: keepLatest ${properties.keepLatest}, keepSupersededMinutes ${properties.keepSupersededMinutes}`,
    );
  }
  const outcomes: PruneOutcome[] = [];
  for (const functionName of properties.functionNames) {
    outcomes.push(
      await pruneVersions(client, functionName, policy).catch((error: unknown) => ({
        functionName,
        deleted: [],
        failed: [{ version: '(listing)', error: String(error) }],
      })),
    );
  }
  return outcomes;
}

/** The versions the policy lets go: not among the newest `keepLatest`, and replaced long enough ago. */
export function versionsToDelete(versions: readonly PublishedVersion[], policy: PrunePolicy): string[] {
  const numbered = versions.filter((v) => /^\d+$/.test(v.version)).sort((a, b) => Number(a.version) - Number(b.version));
  const candidates = numbered.slice(0, Math.max(0, numbered.length - policy.keepLatest));
  return candidates
    .filter((version, i) => {
      const replacedAt = numbered[i + 1]!.publishedAt;
      return policy.now - replacedAt > policy.keepSupersededMs;
    })
    .map((version) => version.version);
}

export async function pruneVersions(client: Pick<LambdaClient, 'send'>, functionName: string, policy: PrunePolicy): Promise<PruneOutcome> {
  const versions: PublishedVersion[] = [];
  let marker: string | undefined;
  do {
    const page = await client.send(new ListVersionsByFunctionCommand({ FunctionName: functionName, Marker: marker }));
    for (const { Version, LastModified } of page.Versions ?? []) {
      if (Version && LastModified) versions.push({ version: Version, publishedAt: Date.parse(LastModified) });
    }
    marker = page.NextMarker;
  } while (marker);
  const deleted: string[] = [];
  const failed: PruneOutcome['failed'] = [];
  for (const version of versionsToDelete(versions, policy)) {
    try {
      await client.send(new DeleteFunctionCommand({ FunctionName: functionName, Qualifier: version }));
      deleted.push(version);
    } catch (error) {
      // Gone already (a concurrent deploy): nothing left to do.
      if ((error as Error).name === 'ResourceNotFoundException') continue;
      failed.push({ version, error: String(error) });
    }
  }
  return { functionName, deleted, failed };
}
