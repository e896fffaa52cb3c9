// An SNS stand-in for the stack's topics and their subscriptions, as CloudFormation creates them:
// ListSubscriptionsByTopic, for `npm run doctor`. An email subscription waits for its recipient to
// follow the link in SNS's confirmation mail, and until then is listed as AWS lists it, with the
// SubscriptionArn `PendingConfirmation`; `confirm` stands for following the link. Other protocols
// (a Lambda, a queue) need no confirmation. Like the other stand-ins the operator's tools call
// (sts.ts, cloudformation.ts), it answers the operator.
import { randomUUID } from 'node:crypto';
import { ApiError } from './aws-protocol.ts';
import { serveAwsQuery } from './aws-query.ts';
import { listenLocally } from './http-server.ts';
import { LOCAL_ACCOUNT } from './template.ts';

export interface LocalSubscription {
  topicArn: string;
  protocol: string;
  endpoint: string;
}

interface Subscription extends LocalSubscription {
  /** Undefined while pending confirmation. */
  arn: string | undefined;
}

export interface LocalSns {
  url: string;
  /** The recipient of an email subscription followed the confirmation link. */
  confirm(topicArn: string, endpoint: string): void;
  close(): Promise<void>;
}

const NEEDS_CONFIRMATION = new Set(['email', 'email-json', 'http', 'https']);

export async function startLocalSns(topicArns: string[], subscriptions: LocalSubscription[]): Promise<LocalSns> {
  const confirmedArn = (topicArn: string) => `${topicArn}:${randomUUID()}`;
  const stored: Subscription[] = subscriptions.map((s) => ({
    ...s,
    arn: NEEDS_CONFIRMATION.has(s.protocol) ? undefined : confirmedArn(s.topicArn),
  }));
  const server = await listenLocally(
    (request, response) =>
      void serveAwsQuery(
        { namespace: 'http://sns.amazonaws.com/doc/2010-03-31/' },
        {
          ListSubscriptionsByTopic(params) {
            const topicArn = params.get('TopicArn') ?? '';
            if (!topicArns.includes(topicArn)) throw new ApiError('NotFound', 'Topic does not exist', 404);
            return {
              Subscriptions: stored
                .filter((s) => s.topicArn === topicArn)
                .map((s) => ({
                  SubscriptionArn: s.arn ?? 'PendingConfirmation',
                  Owner: LOCAL_ACCOUNT,
                  Protocol: s.protocol,
                  Endpoint: s.endpoint,
                  TopicArn: s.topicArn,
                })),
            };
          },
        },
        request,
        response,
      ),
  );
  return {
    url: server.url,
    confirm(topicArn, endpoint) {
      const subscription = stored.find((s) => s.topicArn === topicArn && s.endpoint === endpoint);
      if (!subscription) throw new Error(`No subscription of ${endpoint} to ${topicArn}`);
      subscription.arn ??= confirmedArn(topicArn);
    },
    close: () => server.close(),
  };
}
