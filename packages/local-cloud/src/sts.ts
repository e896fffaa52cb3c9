// An STS stand-in for GetCallerIdentity: who the signing access key belongs to, in the local
// account. A key the local IAM issued is its role's session; any other key is the operator's.
import { serveAwsQuery } from './aws-query.ts';
import { signedBy } from './front-door/signer.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION } from './template.ts';

export interface CallerIdentity {
  Arn: string;
  UserId: string;
  Account: string;
}

/** The operator of the local cloud: an IAM user with administrator access. */
export const OPERATOR_IDENTITY: CallerIdentity = {
  Arn: `arn:${LOCAL_PARTITION}:iam::${LOCAL_ACCOUNT}:user/operator`,
  UserId: 'AIDALOCALOPERATOR',
  Account: LOCAL_ACCOUNT,
};

export async function startLocalSts(identify: (accessKeyId: string | undefined) => CallerIdentity): Promise<LocalHttpServer> {
  return listenLocally((request, response) => {
    const { accessKeyId } = signedBy(request.headers, new URL(request.url ?? '/', 'http://localhost'));
    void serveAwsQuery(
      { namespace: 'https://sts.amazonaws.com/doc/2011-06-15/' },
      { GetCallerIdentity: () => ({ ...identify(accessKeyId) }) },
      request,
      response,
    );
  });
}
