// Service Quotas codes of the quotas a deployment depends on (the same in every Region): the doctor
// reads them, the local cloud's Service Quotas stand-in holds them.
export const LAMBDA_CONCURRENCY_QUOTA = 'L-B99A9384';
export const FARGATE_VCPU_QUOTA = 'L-3032A538';
