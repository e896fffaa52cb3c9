// The KMS stand-in and the local IAM's checks on it, through a front door as the functions reach it:
// Encrypt and Decrypt with a key of the template, the encryption context bound to the ciphertext,
// and kms:Decrypt checked on the key the ciphertext names (not on whatever KeyId a caller sends).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFrontDoor, type FrontDoor } from '../src/front-door/index.ts';
import { createLocalIam, type LocalIam } from '../src/iam/index.ts';
import { keyArnOfCiphertext, startLocalKms, type LocalKms } from '../src/kms.ts';
import { localGetAtt } from '../src/resources.ts';

/** CDK's default key policy: the account's IAM policies decide. */
const TRUST_THE_ACCOUNT = {
  Version: '2012-10-17',
  Statement: [
    {
      Effect: 'Allow',
      Principal: { AWS: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':root']] } },
      Action: 'kms:*',
      Resource: '*',
    },
  ],
};

/**
 * Two keys that trust the account's IAM policies and one whose key policy trusts nobody; Tokens may
 * use the tokens key (and, by its policy, the closed one), Other may decrypt with the other key only.
 */
const TEMPLATE = {
  Resources: {
    TokensKey: { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: TRUST_THE_ACCOUNT } },
    OtherKey: { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: TRUST_THE_ACCOUNT } },
    ClosedKey: { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: { Version: '2012-10-17', Statement: [] } } },
    Tokens: { Type: 'AWS::IAM::Role', Properties: { AssumeRolePolicyDocument: {} } },
    Other: { Type: 'AWS::IAM::Role', Properties: { AssumeRolePolicyDocument: {} } },
    TokensPolicy: {
      Type: 'AWS::IAM::Policy',
      Properties: {
        PolicyName: 'tokens',
        Roles: [{ Ref: 'Tokens' }],
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Effect: 'Allow',
              Action: ['kms:Encrypt', 'kms:Decrypt'],
              Resource: [{ 'Fn::GetAtt': ['TokensKey', 'Arn'] }, { 'Fn::GetAtt': ['ClosedKey', 'Arn'] }],
            },
          ],
        },
      },
    },
    OtherPolicy: {
      Type: 'AWS::IAM::Policy',
      Properties: {
        PolicyName: 'other',
        Roles: [{ Ref: 'Other' }],
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Action: 'kms:Decrypt', Resource: { 'Fn::GetAtt': ['OtherKey', 'Arn'] } }],
        },
      },
    },
  },
};

const tokensKey = localGetAtt(TEMPLATE, 'TokensKey', 'Arn');
const otherKey = localGetAtt(TEMPLATE, 'OtherKey', 'Arn');
const closedKey = localGetAtt(TEMPLATE, 'ClosedKey', 'Arn');
let kms: LocalKms;
let iam: LocalIam;
let door: FrontDoor;

before(async () => {
  kms = await startLocalKms([tokensKey, otherKey, closedKey]);
  iam = createLocalIam(TEMPLATE);
  door = await startFrontDoor({ upstream: kms.endpoint, iam: () => iam });
});
after(async () => {
  await door?.close();
  await kms?.close();
});

/** One call as a role's KMS client makes it (the front door reads the caller from the credential). */
async function call(role: string, operation: string, input: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const { accessKeyId } = iam.accessKeyFor(role);
  const response = await fetch(door.endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': `TrentService.${operation}`,
      authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/20260101/local/kms/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify(input),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const context = { person: 'slack:U0ALICE', server: 'github' };
const text = (base64: unknown) => Buffer.from(String(base64), 'base64').toString('utf8');

test('Encrypt and Decrypt with a key of the template: the ciphertext names its key, and opens only under its context', async () => {
  assert.match(tokensKey, /^arn:aws:kms:local:000000000000:key\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(localGetAtt(TEMPLATE, 'TokensKey', 'Arn'), tokensKey, 'the same id every time');
  const plaintext = Buffer.from('refresh-token-123').toString('base64');
  const sealed = await call('Tokens', 'Encrypt', { KeyId: tokensKey, Plaintext: plaintext, EncryptionContext: context });
  assert.equal(sealed.status, 200, JSON.stringify(sealed.body));
  assert.equal(keyArnOfCiphertext(sealed.body.CiphertextBlob), tokensKey);
  assert.ok(!text(sealed.body.CiphertextBlob).includes('refresh-token-123'));
  // The context's pairs in another order are the same context.
  const opened = await call('Tokens', 'Decrypt', {
    CiphertextBlob: sealed.body.CiphertextBlob,
    EncryptionContext: { server: 'github', person: 'slack:U0ALICE' },
  });
  assert.equal(opened.status, 200, JSON.stringify(opened.body));
  assert.equal(text(opened.body.Plaintext), 'refresh-token-123');
  assert.equal(opened.body.KeyId, tokensKey);
  // Another person's context: the blob does not open (a token copied to another person's record is useless).
  const elsewhere = await call('Tokens', 'Decrypt', {
    CiphertextBlob: sealed.body.CiphertextBlob,
    EncryptionContext: { ...context, person: 'slack:U0MALLORY' },
  });
  assert.equal(elsewhere.body.__type, 'InvalidCiphertextException');
  const bytes = Buffer.from(String(sealed.body.CiphertextBlob), 'base64');
  bytes[bytes.length - 1]! ^= 1;
  const altered = await call('Tokens', 'Decrypt', { CiphertextBlob: bytes.toString('base64'), EncryptionContext: context });
  assert.equal(altered.body.__type, 'InvalidCiphertextException');
  const wrongKey = await call('Tokens', 'Decrypt', {
    CiphertextBlob: sealed.body.CiphertextBlob,
    KeyId: otherKey,
    EncryptionContext: context,
  });
  assert.equal(wrongKey.body.__type, 'IncorrectKeyException');
});

test('the local IAM checks kms:Encrypt on the key named and kms:Decrypt on the key the ciphertext names, with the key policy', async () => {
  const before = kms.calls;
  const sealed = await call('Tokens', 'Encrypt', {
    KeyId: tokensKey,
    Plaintext: Buffer.from('x').toString('base64'),
    EncryptionContext: context,
  });
  assert.equal(sealed.status, 200);
  // Other may decrypt with the other key only: naming that key does not open this one's ciphertext.
  for (const input of [{}, { KeyId: otherKey }]) {
    const denied = await call('Other', 'Decrypt', { CiphertextBlob: sealed.body.CiphertextBlob, EncryptionContext: context, ...input });
    assert.equal(denied.body.__type, 'AccessDeniedException', JSON.stringify(denied.body));
    assert.match(String(denied.body.message), new RegExp(`kms:Decrypt on resource: ${tokensKey}`));
  }
  const encrypt = await call('Other', 'Encrypt', { KeyId: otherKey, Plaintext: Buffer.from('x').toString('base64') });
  assert.equal(encrypt.body.__type, 'AccessDeniedException');
  // A key the template does not have.
  const missing = await call('Tokens', 'Encrypt', { KeyId: tokensKey.replace(/.{4}$/, '0000'), Plaintext: 'eA==' });
  assert.equal(missing.body.__type, 'AccessDeniedException', 'no grant on it either');
  // As in AWS, a key policy that does not trust the account's IAM leaves every IAM grant without effect.
  const closed = await call('Tokens', 'Encrypt', { KeyId: closedKey, Plaintext: 'eA==' });
  assert.equal(closed.body.__type, 'AccessDeniedException');
  assert.equal(kms.calls - before, 1, 'only the allowed call reached the stand-in');
});
