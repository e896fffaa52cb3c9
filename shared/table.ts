// The single DynamoDB table's key schema, shared by the CDK construct, the local cloud and the code.
export const TABLE_KEYS = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds. DynamoDB TTL deletes lazily, so readers also filter expired items themselves. */
  ttlAttribute: 'expiresAt',
} as const;
