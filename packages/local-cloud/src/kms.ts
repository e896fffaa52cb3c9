// A KMS stand-in for the stack's keys (AWS::KMS::Key in the template): Encrypt and Decrypt over
// awsJson1.1 (TrentService.<Operation>), as the real KMSClient calls them. Each key gets a random
// AES-256-GCM key of its own when the stand-in starts, never written anywhere, so a ciphertext is
// good only while it runs (as a key's material never leaves AWS). The ciphertext names its key, as
// AWS's does, so Decrypt needs no KeyId and the local IAM can check kms:Decrypt on the right key;
// the encryption context is authenticated with it, so a blob decrypts only under the context it was
// made with (what binds a stored token to its owner).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ApiError, isPlainObject, serveAwsJson } from './aws-protocol.ts';
import { listenLocally } from './http-server.ts';
import { localArn } from './resources.ts';

export interface LocalKms {
  endpoint: string;
  /** Encrypt and Decrypt calls answered so far. */
  readonly calls: number;
  close(): Promise<void>;
}

const MAGIC = Buffer.from('TWK1');
/** KMS's own limit on Encrypt's plaintext. */
const MAX_PLAINTEXT_BYTES = 4096;

/** The ARN of a key given as KMS accepts it: its ARN or its id (aliases are not kept here). */
export function kmsKeyArn(keyId: unknown): string {
  const id = String(keyId ?? '');
  return id.startsWith('arn:') ? id : localArn('kms', `key/${id}`);
}

/** The ARN of the key a ciphertext (base64, as in the request) was made with, if it is one of this stand-in's. */
export function keyArnOfCiphertext(blob: unknown): string | undefined {
  if (typeof blob !== 'string') return undefined;
  const bytes = Buffer.from(blob, 'base64');
  if (bytes.length < MAGIC.length + 2 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const length = bytes.readUInt16BE(MAGIC.length);
  return bytes.subarray(MAGIC.length + 2, MAGIC.length + 2 + length).toString('utf8');
}

/** The context as authenticated data: its pairs sorted, so the order they were sent in does not matter. */
function contextBytes(context: unknown): Buffer {
  if (context === undefined) return Buffer.alloc(0);
  if (!isPlainObject(context) || !Object.values(context).every((v) => typeof v === 'string')) {
    throw new ApiError('ValidationException', 'EncryptionContext must be a map of strings');
  }
  return Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : 1))));
}

const invalidCiphertext = () => new ApiError('InvalidCiphertextException', '');

/** Starts the stand-in with the template's keys (their ARNs). */
export async function startLocalKms(keyArns: string[]): Promise<LocalKms> {
  const material = new Map(keyArns.map((arn) => [arn, randomBytes(32)]));
  let calls = 0;
  const keyOf = (arn: string) => {
    const key = material.get(arn);
    if (!key) throw new ApiError('NotFoundException', `Key '${arn}' does not exist`);
    return key;
  };
  const operations = {
    Encrypt(input: Record<string, unknown>) {
      calls++;
      const arn = kmsKeyArn(input.KeyId);
      const key = keyOf(arn);
      const plaintext = Buffer.from(String(input.Plaintext ?? ''), 'base64');
      if (plaintext.length < 1 || plaintext.length > MAX_PLAINTEXT_BYTES) {
        throw new ApiError('ValidationException', `Plaintext must be 1 to ${MAX_PLAINTEXT_BYTES} bytes`);
      }
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(contextBytes(input.EncryptionContext));
      const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      const name = Buffer.from(arn);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(name.length);
      const blob = Buffer.concat([MAGIC, length, name, iv, cipher.getAuthTag(), sealed]);
      return { CiphertextBlob: blob.toString('base64'), KeyId: arn, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
    Decrypt(input: Record<string, unknown>) {
      calls++;
      const arn = keyArnOfCiphertext(input.CiphertextBlob);
      if (!arn) throw invalidCiphertext();
      if (input.KeyId !== undefined && kmsKeyArn(input.KeyId) !== arn) {
        throw new ApiError('IncorrectKeyException', 'The key ID in the request does not identify a CMK that can perform this operation.');
      }
      const key = keyOf(arn);
      const bytes = Buffer.from(String(input.CiphertextBlob), 'base64');
      const start = MAGIC.length + 2 + Buffer.byteLength(arn);
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(start, start + 12));
      decipher.setAuthTag(bytes.subarray(start + 12, start + 28));
      decipher.setAAD(contextBytes(input.EncryptionContext));
      try {
        const plaintext = Buffer.concat([decipher.update(bytes.subarray(start + 28)), decipher.final()]);
        return { Plaintext: plaintext.toString('base64'), KeyId: arn, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
      } catch {
        // Another context, or altered bytes: AWS says no more than this either.
        throw invalidCiphertext();
      }
    },
  };
  const server = await listenLocally(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'kms',
          targetPrefix: 'TrentService.',
          contentType: 'application/x-amz-json-1.1',
          internalErrorType: 'KMSInternalException',
        },
        operations,
        request,
        response,
      ),
  );
  return {
    endpoint: server.url,
    get calls() {
      return calls;
    },
    close: () => server.close(),
  };
}
