// A Service Quotas stand-in: the local account's quotas that decide whether the stack can run at
// all, GetServiceQuota and ListServiceQuotas over them. Lambda's concurrent executions, Fargate's
// vCPUs (codes as in AWS) and Bedrock's per-minute quotas of the default model, named as AWS names
// them (Bedrock's codes are not documented and differ per model: locally they are derived from the
// name), with lookalikes of other models and context lengths beside them. The values are those of
// an established account; `setQuota` gives the account another (a new account's lower ones).
import { createHash } from 'node:crypto';
import { ApiError, offsetPage, serveAwsJson } from './aws-protocol.ts';
import { listenLocally } from './http-server.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION } from './template.ts';
import { FARGATE_VCPU_QUOTA, LAMBDA_CONCURRENCY_QUOTA } from '../../../infra/quota-codes.ts';

export interface LocalQuota {
  serviceCode: string;
  serviceName: string;
  code: string;
  name: string;
  value: number;
  unit: string;
}

const bedrockCode = (name: string) => `L-${createHash('sha256').update(name).digest('hex').slice(0, 8).toUpperCase()}`;

function bedrockQuotas(): LocalQuota[] {
  const perMinute = [
    ['Global cross-Region model inference tokens per minute for Anthropic Claude Sonnet 4.5 V1', 5_000_000],
    ['Global cross-Region model inference requests per minute for Anthropic Claude Sonnet 4.5 V1', 2_000],
    ['Cross-region model inference tokens per minute for Anthropic Claude Sonnet 4.5 V1', 2_000_000],
    ['Cross-region model inference requests per minute for Anthropic Claude Sonnet 4.5 V1', 1_000],
    ['On-demand model inference tokens per minute for Anthropic Claude Sonnet 4.5 V1', 1_000_000],
    ['On-demand model inference requests per minute for Anthropic Claude Sonnet 4.5 V1', 500],
    ['Global cross-Region model inference tokens per minute for Anthropic Claude Sonnet 4.5 V1 1M Context Length', 0],
    ['Global cross-Region model inference tokens per minute for Anthropic Claude Sonnet 4 V1', 0],
    ['Cross-region model inference tokens per minute for Anthropic Claude 3.5 Haiku', 400_000],
  ] as const;
  return perMinute.map(([name, value]) => ({
    serviceCode: 'bedrock',
    serviceName: 'Amazon Bedrock',
    code: bedrockCode(name),
    name,
    value,
    unit: 'None',
  }));
}

function defaultQuotas(): LocalQuota[] {
  return [
    {
      serviceCode: 'lambda',
      serviceName: 'AWS Lambda',
      code: LAMBDA_CONCURRENCY_QUOTA,
      name: 'Concurrent executions',
      value: 1000,
      unit: 'None',
    },
    {
      serviceCode: 'fargate',
      serviceName: 'AWS Fargate',
      code: FARGATE_VCPU_QUOTA,
      name: 'Fargate On-Demand vCPU resource count',
      value: 4000,
      unit: 'None',
    },
    ...bedrockQuotas(),
  ];
}

export interface LocalServiceQuotas {
  url: string;
  /** The quota's value, by code. */
  value(serviceCode: string, code: string): number | undefined;
  /** The account now has this value for the quota (named by code or by name). */
  setQuota(serviceCode: string, codeOrName: string, value: number): void;
  close(): Promise<void>;
}

export async function startLocalServiceQuotas(): Promise<LocalServiceQuotas> {
  const quotas = defaultQuotas();
  const find = (serviceCode: unknown, code: unknown) => quotas.find((q) => q.serviceCode === serviceCode && q.code === code);
  const shape = (q: LocalQuota) => ({
    ServiceCode: q.serviceCode,
    ServiceName: q.serviceName,
    QuotaArn: `arn:${LOCAL_PARTITION}:servicequotas:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${q.serviceCode}/${q.code}`,
    QuotaCode: q.code,
    QuotaName: q.name,
    Value: q.value,
    Unit: q.unit,
    Adjustable: true,
    GlobalQuota: false,
  });
  const server = await listenLocally(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'servicequotas',
          targetPrefix: 'ServiceQuotasV20190624.',
          contentType: 'application/x-amz-json-1.1',
          internalErrorType: 'ServiceException',
        },
        {
          GetServiceQuota(input) {
            const quota = find(input.ServiceCode, input.QuotaCode);
            if (!quota)
              throw new ApiError(
                'NoSuchResourceException',
                `The request failed because the specified quota ${String(input.QuotaCode)} does not exist.`,
              );
            return { Quota: shape(quota) };
          },
          ListServiceQuotas(input) {
            const matching = quotas.filter((q) => q.serviceCode === input.ServiceCode);
            if (matching.length === 0)
              throw new ApiError(
                'NoSuchResourceException',
                `The request failed because the specified service ${String(input.ServiceCode)} does not exist.`,
              );
            const max = input.MaxResults === undefined ? 100 : Number(input.MaxResults);
            const { page, nextToken } = offsetPage(
              matching,
              max,
              input.NextToken,
              () => new ApiError('InvalidPaginationTokenException', 'Invalid token'),
            );
            return { Quotas: page.map(shape), ...(nextToken ? { NextToken: nextToken } : {}) };
          },
        },
        request,
        response,
      ),
  );
  return {
    url: server.url,
    value: (serviceCode, code) => find(serviceCode, code)?.value,
    setQuota(serviceCode, codeOrName, value) {
      const quota = quotas.find((q) => q.serviceCode === serviceCode && (q.code === codeOrName || q.name === codeOrName));
      if (!quota) throw new Error(`No local quota ${serviceCode} ${codeOrName}`);
      quota.value = value;
    },
    close: () => server.close(),
  };
}
