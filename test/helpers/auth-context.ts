// An AuthContext for driving the rate limiter directly: a fresh key with wide limits, narrowed
// per test.
import { randomUUID } from 'node:crypto';
import type { RateLimits } from '../../src/domain/plans.ts';
import type { AuthContext } from '../../src/domain/tenant.ts';

export const WIDE_LIMITS: RateLimits = {
  burst_per_second: 1000,
  requests_per_minute_read: 1000,
  requests_per_minute_write: 1000,
  requests_per_day_total: 100_000,
};

export function authWith(limits: Partial<RateLimits>): AuthContext {
  return {
    keyId: randomUUID(),
    keyName: 'test',
    keyLast4: 'abcd',
    mode: 'live',
    scopes: [],
    granted: new Set(),
    allowedIps: [],
    expiresAt: null,
    revoked: false,
    accountId: randomUUID(),
    accountName: 'test',
    planCode: 'free',
    modules: [],
    apiEnabled: true,
    readOnly: false,
    rateLimits: { ...WIDE_LIMITS, ...limits },
  };
}
