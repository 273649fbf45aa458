// Standard Webhooks signing: `whsec_` secrets and the `webhook-signature` header, with every secret still valid
// signing during a rotation. The HMAC is node:crypto's (the standardwebhooks package computes it in JavaScript, for
// browsers, at several times the cost per delivery); test/webhooks.test.ts verifies our headers with that package.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** `whsec_` + base64 of 24 random bytes (192 bits). */
export const newSecret = (): string => `${PREFIX}${randomBytes(24).toString('base64')}`;

/** The key a secret stands for: the bytes its base64 after `whsec_` encodes. */
const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** `v1,<sig>` for each secret, space-separated: base64 of HMAC-SHA256 over `<id>.<timestamp>.<body>`. */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const signed = `${id}.${timestampSeconds}.${body}`;
  return secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`).join(' ');
}
