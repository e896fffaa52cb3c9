// Object keys as S3 writes them into its event notifications: form-URL-encoded, in the records it
// sends to Lambda, SQS and SNS and in the "Object Created" events it sends to EventBridge alike. A
// space becomes '+', a '+' becomes '%2B'; letters, digits, '-', '_', '.', '*' and '/' stay; every
// other byte of the UTF-8 key is %XX. So 'events/my file+1.json' arrives as 'events/my+file%2B1.json',
// and prefix or suffix filters on the key (notification filter rules, EventBridge patterns) match
// that encoded form.

/** The key as S3 puts it in an event. */
export function encodeS3EventKey(key: string): string {
  let encoded = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const char = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.*/]/.test(char)) encoded += char;
    else if (char === ' ') encoded += '+';
    else encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return encoded;
}

/** The object's real key, from the key in an S3 event. */
export const decodeS3EventKey = (key: string): string => decodeURIComponent(key.replace(/\+/g, ' '));
