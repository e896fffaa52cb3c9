// Values sealed with the stack's tokens key (KMS Encrypt/Decrypt), each under an encryption context
// that names what it belongs to: a sealed value copied to another person's or server's item does not
// open there. KMS encrypts at most 4096 bytes directly, which a person's tokens for one server fit.
import { DecryptCommand, EncryptCommand, type KMSClient } from '@aws-sdk/client-kms';

export interface SealDeps {
  kms: Pick<KMSClient, 'send'>;
  /** The tokens key's ARN. */
  keyId: string;
}

/** The most plaintext KMS encrypts in one call. */
const MAX_SEALED_BYTES = 4096;

export async function seal(deps: SealDeps, value: unknown, context: Record<string, string>): Promise<string> {
  const plaintext = Buffer.from(JSON.stringify(value));
  if (plaintext.length > MAX_SEALED_BYTES) {
    throw Object.assign(
      new Error(`the OAuth tokens are ${plaintext.length} bytes, more than the ${MAX_SEALED_BYTES} the tokens key seals`),
      {
        name: 'TokensTooLarge',
      },
    );
  }
  const out = await deps.kms.send(new EncryptCommand({ KeyId: deps.keyId, Plaintext: plaintext, EncryptionContext: context }));
  return Buffer.from(out.CiphertextBlob!).toString('base64');
}

export async function open<T>(deps: SealDeps, sealed: string, context: Record<string, string>): Promise<T> {
  const out = await deps.kms.send(
    new DecryptCommand({ CiphertextBlob: Buffer.from(sealed, 'base64'), KeyId: deps.keyId, EncryptionContext: context }),
  );
  return JSON.parse(Buffer.from(out.Plaintext!).toString('utf8')) as T;
}
