// An IAM stand-in for SimulatePrincipalPolicy: what a role of the stack may do, decided by the local
// IAM from the role's policies in the template (the same evaluation every local AWS call goes
// through). `npm run doctor` asks it whether the agent's role may call the model. Like the other
// stand-ins the operator's tools call (sts.ts, cloudformation.ts), it answers the operator.
import { ApiError } from './aws-protocol.ts';
import { queryList, serveAwsQuery } from './aws-query.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';
import type { LocalIam } from './iam/index.ts';

/** ContextEntries.member.N.{ContextKeyName, ContextKeyValues.member.M}: the request context to simulate. */
function contextEntries(params: URLSearchParams): Record<string, string | string[]> {
  const context: Record<string, string | string[]> = {};
  for (let index = 1; params.has(`ContextEntries.member.${index}.ContextKeyName`); index++) {
    const entry = `ContextEntries.member.${index}`;
    const values = queryList(params, `${entry}.ContextKeyValues`);
    context[params.get(`${entry}.ContextKeyName`)!] = values.length === 1 ? values[0]! : values;
  }
  return context;
}

export async function startLocalIamApi(iam: () => LocalIam): Promise<LocalHttpServer> {
  return listenLocally(
    (request, response) =>
      void serveAwsQuery(
        { namespace: 'https://iam.amazonaws.com/doc/2010-05-08/' },
        {
          async SimulatePrincipalPolicy(params) {
            const source = params.get('PolicySourceArn') ?? '';
            const current = iam();
            const roleId = [...current.roles].find(([, arn]) => arn === source)?.[0];
            if (!roleId) {
              throw new ApiError('NoSuchEntity', `The role with name ${source.split('/').pop()} cannot be found.`, 404);
            }
            const actions = queryList(params, 'ActionNames');
            if (actions.length === 0) throw new ApiError('InvalidInput', 'ActionNames must contain at least one action.');
            const resources = queryList(params, 'ResourceArns');
            const context = contextEntries(params);
            const results = [];
            for (const action of actions) {
              for (const resource of resources.length > 0 ? resources : ['*']) {
                const decision = await current.authorize({ role: roleId }, { action, resource, context });
                results.push({
                  EvalActionName: action,
                  EvalResourceName: resource,
                  EvalDecision: decision.allowed ? 'allowed' : decision.explicitDeny ? 'explicitDeny' : 'implicitDeny',
                  MatchedStatements: [],
                  MissingContextValues: [],
                });
              }
            }
            return { EvaluationResults: results, IsTruncated: false };
          },
        },
        request,
        response,
      ),
  );
}
