// A CloudFormation stand-in for DescribeStacks: the local cloud's one stack, deployed, with the
// template's outputs resolved as CloudFormation would (and the local URLs where only a local value
// works: the API's address).
import { ApiError } from './aws-protocol.ts';
import { serveAwsQuery } from './aws-query.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';

export interface LocalStack {
  name: string;
  id: string;
  status: 'CREATE_COMPLETE' | 'UPDATE_COMPLETE';
  createdAt: Date;
  outputs: { key: string; value: string; description?: string }[];
}

export async function startLocalCloudFormation(stack: () => LocalStack): Promise<LocalHttpServer> {
  return listenLocally(
    (request, response) =>
      void serveAwsQuery(
        { namespace: 'http://cloudformation.amazonaws.com/doc/2010-05-15/' },
        {
          DescribeStacks(params) {
            const current = stack();
            const wanted = params.get('StackName');
            if (wanted !== null && wanted !== current.name && wanted !== current.id) {
              throw new ApiError('ValidationError', `Stack with id ${wanted} does not exist`);
            }
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
        },
        request,
        response,
      ),
  );
}
