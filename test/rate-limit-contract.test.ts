// The rate limiter's contract (SPEC part 8, DECISIONS B.11), run over every store: in-process and Redis.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyReply } from 'fastify';
import { AppError } from '../src/errors/app-error.ts';
import type { AuthContext } from '../src/domain/tenant.ts';
import { createRateLimiter, createRateLimiterOver, type RateLimiter } from '../src/http/rate-limit.ts';
import { MemoryRateLimitStore } from '../src/infra/rate-limit/memory-store.ts';
import { recordingLogger } from './helpers/recording-logger.ts';
import { authWith } from './helpers/auth-context.ts';
import { sharedLimiter, startTestRedis } from './helpers/redis-server.ts';

const redis = await startTestRedis();
after(() => redis.close());

/** A minute boundary, so tests can reason about which window a fake instant falls in. */
const T0 = Date.UTC(2031, 4, 6, 12, 0, 0);
const NEXT_UTC_MIDNIGHT = Date.UTC(2031, 4, 7);

/** Stands in for the Fastify reply: the limiter only sets headers on it (the HTTP test checks real replies). */
function headerSink(): { reply: FastifyReply; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  const reply = {
    header(key: string, value: string) {
      headers[key.toLowerCase()] = value;
      return reply;
    },
    headers(values: Record<string, string>) {
      for (const [key, value] of Object.entries(values)) headers[key.toLowerCase()] = value;
      return reply;
    },
  };
  return { reply: reply as unknown as FastifyReply, headers };
}

type Outcome = { ok: true; headers: Record<string, string> } | { ok: false; error: AppError; headers: Record<string, string> };

async function outcome(run: (reply: FastifyReply) => Promise<void>): Promise<Outcome> {
  const { reply, headers } = headerSink();
  try {
    await run(reply);
    return { ok: true, headers };
  } catch (error) {
    assert.ok(error instanceof AppError, `expected an AppError, got ${String(error)}`);
    return { ok: false, error, headers };
  }
}

const charge = (limiter: RateLimiter, auth: AuthContext, access: 'read' | 'write') =>
  outcome((reply) => limiter.chargeKey(auth, access, reply));
const chargeIp = (limiter: RateLimiter, ip: string) => outcome((reply) => limiter.chargeAnonymous(ip, reply));

async function chargeTimes(limiter: RateLimiter, auth: AuthContext, access: 'read' | 'write', times: number): Promise<Outcome[]> {
  const results: Outcome[] = [];
  for (let i = 0; i < times; i++) results.push(await charge(limiter, auth, access));
  return results;
}

function assertRefused(result: Outcome, expected: { detail: string; retryAfter: string; limit: number; resetMs: number }) {
  assert.equal(result.ok, false, 'expected a refusal');
  if (result.ok) return;
  assert.equal(result.error.code, 'rate-limit-exceeded');
  assert.equal(result.error.status, 429);
  assert.equal(result.error.detail, expected.detail);
  const want = {
    'x-ratelimit-limit': String(expected.limit),
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(expected.resetMs / 1000),
    'retry-after': expected.retryAfter,
  };
  assert.deepEqual(result.error.headers, want);
  assert.deepEqual(result.headers, want);
}

const allowed = (results: Outcome[]) => results.filter((r) => r.ok).length;

class FakeClock {
  constructor(public t: number) {}
  now = () => this.t;
}

interface StoreCase {
  name: string;
  make(clock: FakeClock): RateLimiter;
  store: 'memory' | 'redis';
}

const cases: StoreCase[] = [
  { name: 'memory', store: 'memory', make: (clock) => createRateLimiter({ now: clock.now, logger: recordingLogger().logger }) },
  {
    name: 'redis',
    store: 'redis',
    make: (clock) =>
      createRateLimiter({ redisUrl: redis.url, keyPrefix: redis.newPrefix(), now: clock.now, logger: recordingLogger().logger }),
  },
];

for (const storeCase of cases) {
  describe(`rate limiter over the ${storeCase.name} store`, () => {
    const limiters: RateLimiter[] = [];
    const limiterAt = (t: number) => {
      const clock = new FakeClock(t);
      const limiter = storeCase.make(clock);
      limiters.push(limiter);
      return { clock, limiter };
    };
    after(async () => {
      await Promise.all(limiters.map((l) => l.close()));
    });

    test('reports its store as healthy', async () => {
      const { limiter } = limiterAt(T0);
      await charge(limiter, authWith({}), 'read');
      assert.deepEqual(limiter.status(), { store: storeCase.store, healthy: true });
    });

    test('a success carries the minute ceiling of its class, an empty Remaining and the minute reset', async () => {
      const { limiter } = limiterAt(T0 + 12_345);
      const auth = authWith({ requests_per_minute_read: 7, requests_per_minute_write: 3 });
      const read = await charge(limiter, auth, 'read');
      assert.deepEqual(read, {
        ok: true,
        headers: { 'x-ratelimit-limit': '7', 'x-ratelimit-remaining': '', 'x-ratelimit-reset': String((T0 + 60_000) / 1000) },
      });
      const write = await charge(limiter, auth, 'write');
      assert.deepEqual(write, {
        ok: true,
        headers: { 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '', 'x-ratelimit-reset': String((T0 + 60_000) / 1000) },
      });
    });

    test('the burst layer refuses the request over its ceiling "per second" with Retry-After 1, and its next second allows again', async () => {
      const { clock, limiter } = limiterAt(T0 + 5_400);
      const auth = authWith({ burst_per_second: 3 });
      const first = await chargeTimes(limiter, auth, 'read', 3);
      assert.equal(allowed(first), 3);
      assertRefused(await charge(limiter, auth, 'write'), { detail: 'per second', retryAfter: '1', limit: 3, resetMs: T0 + 6_000 });
      clock.t = T0 + 5_999;
      assert.equal((await charge(limiter, auth, 'read')).ok, false, 'same second, still refused');
      clock.t = T0 + 6_000;
      assert.equal(allowed(await chargeTimes(limiter, auth, 'read', 3)), 3, 'a new second has a new window');
      assert.equal((await charge(limiter, auth, 'read')).ok, false);
    });

    test('reads and writes have separate minute windows, each refused "per minute" with Retry-After 60', async () => {
      const { clock, limiter } = limiterAt(T0 + 1_000);
      const auth = authWith({ requests_per_minute_read: 2, requests_per_minute_write: 1 });
      assert.equal(allowed(await chargeTimes(limiter, auth, 'read', 2)), 2);
      assertRefused(await charge(limiter, auth, 'read'), { detail: 'per minute', retryAfter: '60', limit: 2, resetMs: T0 + 60_000 });
      assert.equal((await charge(limiter, auth, 'write')).ok, true, 'writes are not charged to the read window');
      assertRefused(await charge(limiter, auth, 'write'), { detail: 'per minute', retryAfter: '60', limit: 1, resetMs: T0 + 60_000 });
      clock.t = T0 + 59_999;
      assert.equal((await charge(limiter, auth, 'read')).ok, false);
      clock.t = T0 + 60_000;
      assert.equal((await charge(limiter, auth, 'read')).ok, true, 'the next minute window allows reads again');
      assert.equal((await charge(limiter, auth, 'write')).ok, true, 'and writes');
    });

    test('the day layer refuses "per day" with Retry-After 86400 until the next UTC midnight', async () => {
      const { clock, limiter } = limiterAt(T0);
      const auth = authWith({ requests_per_day_total: 3 });
      assert.equal((await charge(limiter, auth, 'read')).ok, true);
      clock.t += 61_000;
      assert.equal((await charge(limiter, auth, 'write')).ok, true);
      clock.t += 3_600_000;
      assert.equal((await charge(limiter, auth, 'read')).ok, true);
      assertRefused(await charge(limiter, auth, 'write'), { detail: 'per day', retryAfter: '86400', limit: 3, resetMs: NEXT_UTC_MIDNIGHT });
      clock.t = NEXT_UTC_MIDNIGHT - 1;
      assert.equal((await charge(limiter, auth, 'read')).ok, false);
      clock.t = NEXT_UTC_MIDNIGHT;
      assert.equal((await charge(limiter, auth, 'read')).ok, true, 'a new UTC day has a new window');
    });

    test('layers are evaluated burst, then minute, then day, and a refused request still counts in every layer', async () => {
      const { clock, limiter } = limiterAt(T0 + 100);
      const auth = authWith({ burst_per_second: 2, requests_per_minute_read: 3, requests_per_day_total: 4 });
      // second 0: 3 requests, the third over burst (also counted in minute and day)
      assert.equal(allowed(await chargeTimes(limiter, auth, 'read', 2)), 2);
      assertRefused(await charge(limiter, auth, 'read'), { detail: 'per second', retryAfter: '1', limit: 2, resetMs: T0 + 1_000 });
      // second 1: the minute count is now 4 > 3 (and the day count 4 is still allowed): minute refuses
      clock.t = T0 + 1_100;
      assertRefused(await charge(limiter, auth, 'read'), { detail: 'per minute', retryAfter: '60', limit: 3, resetMs: T0 + 60_000 });
      // next minute: burst and minute are fresh, but the day has counted 5 > 4 including both refusals
      clock.t = T0 + 60_100;
      assertRefused(await charge(limiter, auth, 'write'), { detail: 'per day', retryAfter: '86400', limit: 4, resetMs: NEXT_UTC_MIDNIGHT });
    });

    test('when several layers are exceeded at once the burst layer is named', async () => {
      const { limiter } = limiterAt(T0);
      const auth = authWith({ burst_per_second: 1, requests_per_minute_write: 1, requests_per_day_total: 1 });
      assert.equal((await charge(limiter, auth, 'write')).ok, true);
      assertRefused(await charge(limiter, auth, 'write'), { detail: 'per second', retryAfter: '1', limit: 1, resetMs: T0 + 1_000 });
    });

    test('counters belong to one key: another key of the same account is not affected', async () => {
      const { limiter } = limiterAt(T0);
      const first = authWith({ burst_per_second: 1 });
      const second = { ...first, keyId: randomUUID() };
      assert.equal((await charge(limiter, first, 'read')).ok, true);
      assert.equal((await charge(limiter, first, 'read')).ok, false);
      assert.equal((await charge(limiter, second, 'read')).ok, true);
    });

    test('under concurrency a limit of N lets exactly N of M > N simultaneous requests through', async () => {
      const { limiter } = limiterAt(T0 + 500);
      const auth = authWith({ burst_per_second: 10 });
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => charge(limiter, auth, i % 2 === 0 ? 'read' : 'write')));
      assert.equal(allowed(results), 10);
      for (const r of results) if (!r.ok) assert.equal(r.error.detail, 'per second');
    });

    test('simultaneous requests of several keys are each counted against their own key only', async () => {
      const { limiter } = limiterAt(T0 + 600);
      const keys = [
        { limit: 5, requests: 5 },
        { limit: 5, requests: 15 },
        { limit: 1, requests: 3 },
      ].map((k) => ({ ...k, auth: authWith({ burst_per_second: k.limit }) }));
      // Sent in one turn of the event loop: on Redis their charges leave together, in one pipeline.
      const results = await Promise.all(
        keys.map(({ auth, requests }) => Promise.all(Array.from({ length: requests }, () => charge(limiter, auth, 'read')))),
      );
      assert.deepEqual(
        results.map(allowed),
        keys.map((k) => k.limit),
      );
      for (const r of results.flat()) if (!r.ok) assert.equal(r.error.detail, 'per second');
    });

    test('anonymous requests: 30 per minute per client IP, then 429 "per minute" with Retry-After 60 and no key headers', async () => {
      const { clock, limiter } = limiterAt(T0 + 30_000);
      const ip = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
      const results = await Promise.all(Array.from({ length: 35 }, () => chargeIp(limiter, ip)));
      assert.equal(allowed(results), 30);
      for (const r of results) {
        if (r.ok) assert.deepEqual(r.headers, {});
        else {
          assert.equal(r.error.code, 'rate-limit-exceeded');
          assert.equal(r.error.detail, 'per minute');
          assert.deepEqual(r.error.headers, { 'retry-after': '60' });
        }
      }
      assert.equal((await chargeIp(limiter, '203.0.113.9')).ok, true, 'another IP has its own counter');
      assert.equal((await charge(limiter, authWith({ burst_per_second: 1 }), 'read')).ok, true, 'keys are not charged');
      clock.t = T0 + 60_000;
      assert.equal((await chargeIp(limiter, ip)).ok, true, 'the next minute allows the IP again');
    });

    test('anonymous IPv6 clients are counted per /64, and IPv4-mapped addresses as IPv4', async () => {
      const { limiter } = limiterAt(T0);
      const net64 = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:1`;
      for (let i = 1; i <= 30; i++) assert.equal((await chargeIp(limiter, `${net64}::${i.toString(16)}`)).ok, true);
      assert.equal((await chargeIp(limiter, `${net64}:ffff:ffff:ffff:ffff`)).ok, false, 'same /64');
      assert.equal((await chargeIp(limiter, `${net64.slice(0, -1)}2::1`)).ok, true, 'another /64');
      const v4 = `192.0.2.${Math.floor(Math.random() * 250) + 1}`;
      for (let i = 0; i < 30; i++) assert.equal((await chargeIp(limiter, v4)).ok, true);
      assert.equal((await chargeIp(limiter, `::ffff:${v4}`)).ok, false);
    });
  });
}

describe('the in-process store', () => {
  test('drops counters whose window has passed', async () => {
    const store = new MemoryRateLimitStore();
    const clock = new FakeClock(T0);
    const limiter = createRateLimiterOver(store, clock.now);
    for (let i = 0; i < 5; i++) await charge(limiter, authWith({}), 'read');
    assert.equal(store.size(), 15, 'three layers for each of five keys');
    clock.t = NEXT_UTC_MIDNIGHT + 20_000;
    await charge(limiter, authWith({}), 'read');
    assert.equal(store.size(), 3, 'only the counters of the request of the new day are left');
  });
});

describe('two limiters sharing one Redis', () => {
  test('enforce exactly the limit of one: N allowed in total out of M > N simultaneous requests', async () => {
    const prefix = redis.newPrefix();
    const clock = new FakeClock(T0 + 250);
    const a = sharedLimiter(redis, prefix, clock.now);
    const b = sharedLimiter(redis, prefix, clock.now);
    try {
      const auth = authWith({ burst_per_second: 1000, requests_per_minute_write: 25 });
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => charge(i % 2 === 0 ? a : b, auth, 'write')));
      assert.equal(allowed(results), 25);
      for (const r of results) if (!r.ok) assert.equal(r.error.detail, 'per minute');
      assert.deepEqual(
        [a.status(), b.status()],
        [
          { store: 'redis', healthy: true },
          { store: 'redis', healthy: true },
        ],
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
