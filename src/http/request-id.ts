// X-Request-Id: a valid client value (≤128 of letters, digits, `_`, `-`) is reused, anything
// else is replaced by a new UUID. Every response carries it; envelopes and problems echo it.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function generateRequestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
}
