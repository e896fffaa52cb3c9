// Slack checks an events request URL with a `url_verification` request when the app is created
// from the manifest (and whenever the URL changes), signed with that new app's signing secret,
// which the operator can store only once the app exists. The request carries no data, only a
// challenge to echo back, so it is answered without a signature, after a shape check strict enough
// that nothing else passes: a small JSON object with exactly `type`, `token` and `challenge`, the two
// strings of the characters Slack uses. Anything else, however close, goes to the Slack adapter's
// signature check. Answering tells a caller only that this is a Slack events URL, which the 401
// tells it too; the answer echoes nothing but the caller's own short alphanumeric challenge.
import * as z from 'zod';

/** A url_verification body is about 150 bytes: nothing larger is parsed here. */
const MAX_BODY_CHARS = 512;

const urlVerification = z.strictObject({
  type: z.literal('url_verification'),
  token: z.string().regex(/^[A-Za-z0-9]{1,64}$/),
  challenge: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/),
});

/** The challenge to answer, when the request is exactly a url_verification; undefined for anything else. */
export function urlVerificationChallenge(contentType: string | undefined, body: string): string | undefined {
  if (!/^application\/json\s*(;|$)/i.test(contentType ?? '') || body.length > MAX_BODY_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const verification = urlVerification.safeParse(parsed);
  return verification.success ? verification.data.challenge : undefined;
}
