// Standard Webhooks signing (standardwebhooks package): `whsec_` secrets and the
// `webhook-signature` header, with every secret still valid signing during a rotation.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** `whsec_` + base64 of 24 random bytes (192 bits). */
export const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

/** `v1,<sig>` for each secret, space-separated, over `<id>.<timestamp>.<body>`. */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
}
