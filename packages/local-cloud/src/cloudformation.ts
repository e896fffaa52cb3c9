// A CloudFormation stand-in for DescribeStacks and ListStackResources: the local cloud's one stack,
// deployed, with the template's outputs resolved as CloudFormation would (and the local URLs where
// only a local value works: the API's address), and its resources with their physical ids.
import { ApiError } from './aws-protocol.ts';
import { serveAwsQuery } from './aws-query.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';

/** The statuses a deployed stack rests in; a rollback leaves the previous version running. */
export type LocalStackStatus = 'CREATE_COMPLETE' | 'UPDATE_COMPLETE' | 'UPDATE_ROLLBACK_COMPLETE' | 'UPDATE_ROLLBACK_FAILED';

export interface LocalStack {
  name: string;
  id: string;
  status: LocalStackStatus;
  createdAt: Date;
  outputs: { key: string; value: string; description?: string }[];
  resources: { logicalId: string; physicalId: string; type: string }[];
}

/** ListStackResources answers this many a page, as CloudFormation does. */
const RESOURCES_PER_PAGE = 100;

export async function startLocalCloudFormation(stack: () => LocalStack): Promise<LocalHttpServer> {
  const named = (params: URLSearchParams) => {
    const current = stack();
    const wanted = params.get('StackName');
    if (wanted !== null && wanted !== current.name && wanted !== current.id) {
      throw new ApiError('ValidationError', `Stack with id ${wanted} does not exist`);
    }
    return current;
  };
  return listenLocally(
    (request, response) =>
      void serveAwsQuery(
        { namespace: 'http://cloudformation.amazonaws.com/doc/2010-05-15/' },
        {
          DescribeStacks(params) {
            const current = named(params);
            return {
              Stacks: [
                {
                  StackId: current.id,
                  StackName: current.name,
                  CreationTime: current.createdAt,
                  StackStatus: current.status,
                  Outputs: current.outputs.map((o) => ({ OutputKey: o.key, OutputValue: o.value, Description: o.description })),
                },
              ],
            };
          },
          ListStackResources(params) {
            const current = named(params);
            const offset = Number(params.get('NextToken') ?? 0);
            if (!Number.isInteger(offset) || offset < 0) throw new ApiError('ValidationError', 'Invalid NextToken');
            const page = current.resources.slice(offset, offset + RESOURCES_PER_PAGE);
            const next = offset + RESOURCES_PER_PAGE;
            return {
              StackResourceSummaries: page.map((r) => ({
                LogicalResourceId: r.logicalId,
                PhysicalResourceId: r.physicalId,
                ResourceType: r.type,
                LastUpdatedTimestamp: current.createdAt,
                ResourceStatus: 'CREATE_COMPLETE',
              })),
              NextToken: next < current.resources.length ? String(next) : undefined,
            };
          },
        },
        request,
        response,
      ),
  );
}
