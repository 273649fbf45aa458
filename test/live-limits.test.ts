// GET /v1/me rate_limit_status (issue 28): each layer's limit, remaining and reset as they stand, from the
// limiter's own store (in process or Redis), counting nothing more than the request itself; two servers
// sharing one Redis count down together.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createRateLimiter } from '../src/http/rate-limit.ts';
import { openTestDatabase, startTestServer, type TestServer } from './helpers/harness.ts';
import { recordingLogger } from './helpers/recording-logger.ts';
import { sharedLimiter, startTestRedis } from './helpers/redis-server.ts';

const redis = await startTestRedis();
const database = await openTestDatabase();
after(async () => {
  await redis.close();
  await database.close();
  await database.drop();
});

/** 12.5 s into a minute (and a second boundary + 500 ms) in the future: the fake clock never moves. */
const T0 = (Math.floor(Date.now() / 86_400_000) + 2) * 86_400_000 + 12_500;
const LIMITS = { burst_per_second: 50, requests_per_minute_read: 40, requests_per_minute_write: 30, requests_per_day_total: 1000 };

const statusOf = async (s: TestServer, key: string) => {
  const res = await s.request('GET', '/v1/me', { key });
  assert.equal(res.status, 200, res.text);
  return res.body.data.rate_limit_status;
};

for (const store of [
  { name: 'in-process counters', redis: false },
  { name: 'Redis', redis: true },
]) {
  describe(`rate_limit_status with ${store.name}`, () => {
    it('counts down exactly: a read takes one from burst, read and day; a write from burst, write and day', async () => {
      const now = () => T0;
      const rateLimiter = store.redis
        ? createRateLimiter({ redisUrl: redis.url, keyPrefix: redis.newPrefix(), now, logger: recordingLogger().logger })
        : undefined;
      const s = await startTestServer({ database, now, rateLimiter });
      try {
        const { key } = await s.createAccountWithKey({ rateLimits: LIMITS });
        const first = await statusOf(s, key);
        // The /v1/me request itself was counted (a read), and nothing more.
        assert.deepEqual(first, {
          burst: { limit: 50, remaining: 49, reset: 1 },
          read: { limit: 40, remaining: 39, reset: 48 },
          write: { limit: 30, remaining: 30, reset: 48 },
          day: { limit: 1000, remaining: 999, reset: 86_388 },
        });
        assert.equal((await s.request('POST', '/v1/customers', { key, body: { full_name: 'A', phone: '1' } })).status, 201);
        assert.equal((await s.request('GET', '/v1/customers', { key })).status, 200);
        const second = await statusOf(s, key);
        assert.deepEqual([second.burst.remaining, second.read.remaining, second.write.remaining, second.day.remaining], [46, 37, 29, 996]);
        // A refused request counts too (SPEC 8).
        assert.equal((await s.request('POST', '/v1/customers', { key, body: {} })).status, 422);
        const third = await statusOf(s, key);
        assert.deepEqual([third.write.remaining, third.day.remaining], [28, 994]);
      } finally {
        await s.close();
      }
    });
  });
}

describe('rate_limit_status across two servers sharing one Redis', () => {
  it('each server sees the requests of both', async () => {
    const prefix = redis.newPrefix();
    const now = () => T0;
    const servers: TestServer[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        servers.push(await startTestServer({ database, now, rateLimiter: sharedLimiter(redis, prefix, now) }));
      }
      const [a, b] = servers as [TestServer, TestServer];
      const { key } = await a.createAccountWithKey({ rateLimits: LIMITS });
      for (let i = 0; i < 3; i++) assert.equal((await a.request('GET', '/v1/customers', { key })).status, 200);
      for (let i = 0; i < 2; i++)
        assert.equal((await b.request('POST', '/v1/customers', { key, body: { full_name: 'B', phone: '1' } })).status, 201);
      const fromB = await statusOf(b, key);
      assert.deepEqual([fromB.burst.remaining, fromB.read.remaining, fromB.write.remaining, fromB.day.remaining], [44, 36, 28, 994]);
      const fromA = await statusOf(a, key);
      assert.deepEqual([fromA.burst.remaining, fromA.read.remaining, fromA.write.remaining, fromA.day.remaining], [43, 35, 28, 993]);
    } finally {
      for (const s of servers) await s.close();
    }
  });
});
