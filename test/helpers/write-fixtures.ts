// Shared pieces of the write API tests: an account whose limits never get in the way, sale
// items, and the assertion of one refused field in a 422.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestResponse, TestServer } from './harness.ts';

/** Limits high enough that concurrent tests are never rate limited. */
export const UNLIMITED = {
  burst_per_second: 100_000,
  requests_per_minute_read: 1_000_000,
  requests_per_minute_write: 1_000_000,
  requests_per_day_total: 10_000_000,
};

export async function writer(s: TestServer, options: { test?: boolean; scopes?: string[] } = {}) {
  const { account, key, keyId } = await s.createAccountWithKey({ rateLimits: UNLIMITED, ...options });
  return { accountId: account.id, key, keyId, tenant: { team_id: account.id, mode: options.test ? 'test' : 'live' } };
}

export const item = (overrides: Record<string, unknown> = {}) => ({
  catalog_type: 'product',
  catalog_item_id: randomUUID(),
  quantity: 1,
  unit_price: 10,
  ...overrides,
});

/** A 422 `validation` problem whose errors[] holds `field` with `code` and a Portuguese message. */
export function assertFieldError(res: TestResponse, field: string, code: string): void {
  assert.equal(res.status, 422, `expected 422 for ${field}/${code}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.match(res.body.type, /\/validation$/);
  const found = (res.body.errors as { field: string; code: string; message: string }[]).find((e) => e.field === field);
  assert.ok(found, `no error for ${field} in ${JSON.stringify(res.body.errors)}`);
  assert.equal(found.code, code, `code of ${field}: ${JSON.stringify(found)}`);
  assert.equal(typeof found.message, 'string');
  assert.ok(found.message.length > 0);
}
