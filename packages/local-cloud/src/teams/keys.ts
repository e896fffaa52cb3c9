// The stand-in's Bot Framework identity provider: an RSA key pair published as OpenID metadata and a
// JWKS, tokens signed with it the way the Bot Framework signs the requests it sends to a bot, and a
// client-credentials token endpoint for the bot's outbound calls.
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type CryptoKey } from 'jose';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function createSigningKey(kid = `local-${randomBytes(4).toString('hex')}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig', endorsements: ['msteams'] };
  return { kid, privateKey, publicJwk };
}

export interface ActivityTokenClaims {
  issuer: string;
  /** The bot's app id. */
  audience: string;
  serviceUrl: string;
  /** Seconds since the epoch; default now. */
  issuedAt?: number;
  /** Lifetime in seconds; default an hour. */
  expiresIn?: number;
}

/** A token like the one the Bot Framework puts in the Authorization header of each activity. */
export async function signActivityToken(key: SigningKey, claims: ActivityTokenClaims): Promise<string> {
  const issuedAt = claims.issuedAt ?? Math.floor(Date.now() / 1000);
  return new SignJWT({ serviceurl: claims.serviceUrl })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(claims.issuer)
    .setAudience(claims.audience)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt)
    .setExpirationTime(issuedAt + (claims.expiresIn ?? 3600))
    .sign(key.privateKey);
}
