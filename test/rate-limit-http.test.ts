// Rate limits over real HTTP (SPEC part 8): the headers of successes and failures, the 429 problem, HEAD as a
// read, the anonymous per-IP limit, and two servers sharing one Redis — on the in-process store and on Redis.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errors } from '../src/errors/app-error.ts';
import { createRateLimiter } from '../src/http/rate-limit.ts';
import { openTestDatabase, startTestServer, type TestResponse, type TestServer } from './helpers/harness.ts';
import { recordingLogger } from './helpers/recording-logger.ts';
import { sharedLimiter, startTestRedis } from './helpers/redis-server.ts';

const redis = await startTestRedis();
// One database for every server of this file: rate limits are not stored there, and migrating is the slow part.
const database = await openTestDatabase();
after(async () => {
  await redis.close();
  await database.close();
  await database.drop();
});

/** A minute boundary in the future: the fake clock of every server in this file starts from it. */
const T0 = (Math.floor(Date.now() / 60_000) + 10) * 60_000;
const seconds = (ms: number) => String(ms / 1000);

/** A route that always answers 404 and one that validates its body: every authenticated request counts (SPEC 8). */
function probeRoutes(app: FastifyInstance) {
  app.get('/v1/rate-limit-probe/:id', { config: { operationId: 'rateLimitProbe.get' } }, async () => {
    throw errors.notFound();
  });
  app.post(
    '/v1/rate-limit-probe',
    { config: { operationId: 'rateLimitProbe.create' }, schema: { body: Type.Object({ name: Type.String({ minLength: 1 }) }) } },
    async () => ({ ok: true }),
  );
}

function assertSuccessHeaders(res: TestResponse, limit: number, resetMs: number) {
  assert.equal(res.headers.get('x-ratelimit-limit'), String(limit));
  assert.equal(res.headers.has('x-ratelimit-remaining'), true, 'X-RateLimit-Remaining is sent');
  assert.equal(res.headers.get('x-ratelimit-remaining'), '', 'and it is empty on success');
  assert.equal(res.headers.get('x-ratelimit-reset'), seconds(resetMs));
  assert.equal(res.headers.get('retry-after'), null);
}

function assert429(res: TestResponse, expected: { detail: string; retryAfter: string; limit?: number; resetMs?: number }) {
  assert.equal(res.status, 429, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.match(res.body.type, /\/rate-limit-exceeded$/);
  assert.equal(res.body.status, 429);
  assert.equal(res.body.detail, expected.detail);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
  assert.equal(res.headers.get('retry-after'), expected.retryAfter);
  if (expected.limit === undefined) {
    assert.equal(res.headers.get('x-ratelimit-limit'), null);
    return;
  }
  assert.equal(res.headers.get('x-ratelimit-limit'), String(expected.limit));
  assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
  assert.equal(res.headers.get('x-ratelimit-reset'), seconds(expected.resetMs as number));
}

/** The raw header lines of a response, as Node received them off the socket. */
function rawHeaders(url: string, key: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/v1/me`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.rawHeaders));
    });
    req.on('error', reject);
  });
}

const stores = [
  { name: 'in-process counters (the default without REDIS_URL)', redis: false },
  { name: 'Redis', redis: true },
];

for (const store of stores) {
  describe(`rate limits over HTTP with ${store.name}`, () => {
    let s: TestServer;
    let clock = T0;
    before(async () => {
      const now = () => clock;
      const rateLimiter = store.redis
        ? createRateLimiter({ redisUrl: redis.url, keyPrefix: redis.newPrefix(), now, logger: recordingLogger().logger })
        : undefined;
      s = await startTestServer({ database, now, rateLimiter, extraRoutes: probeRoutes });
    });
    after(() => s.close());

    it('a 200 carries the read ceiling, an empty X-RateLimit-Remaining and the minute reset', async () => {
      clock = T0 + 1_500;
      const { key } = await s.createAccountWithKey({ rateLimits: { requests_per_minute_read: 7, requests_per_minute_write: 3 } });
      const res = await s.request('GET', '/v1/me', { key });
      assert.equal(res.status, 200);
      assertSuccessHeaders(res, 7, T0 + 60_000);
      const raw = await rawHeaders(s.url, key);
      const at = raw.findIndex((name) => name.toLowerCase() === 'x-ratelimit-remaining');
      assert.ok(at >= 0 && at % 2 === 0, 'the header line is on the wire');
      assert.equal(raw[at + 1], '');
    });

    it('a 404 and a 422 of an authenticated request carry the headers and count', async () => {
      clock = T0 + 60_000;
      const { key } = await s.createAccountWithKey({ rateLimits: { requests_per_minute_read: 2, requests_per_minute_write: 1 } });
      const notFound = await s.request('GET', '/v1/rate-limit-probe/123', { key });
      assert.equal(notFound.status, 404);
      assertSuccessHeaders(notFound, 2, T0 + 120_000);
      const invalid = await s.request('POST', '/v1/rate-limit-probe', { key, body: { name: '' } });
      assert.equal(invalid.status, 422);
      assertSuccessHeaders(invalid, 1, T0 + 120_000);
      assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
      assert429(await s.request('GET', '/v1/me', { key }), { detail: 'per minute', retryAfter: '60', limit: 2, resetMs: T0 + 120_000 });
      assert429(await s.request('POST', '/v1/rate-limit-probe', { key, body: { name: 'x' } }), {
        detail: 'per minute',
        retryAfter: '60',
        limit: 1,
        resetMs: T0 + 120_000,
      });
    });

    it('HEAD counts as a read, and writes have their own minute window', async () => {
      clock = T0 + 120_000;
      const { key } = await s.createAccountWithKey({ rateLimits: { requests_per_minute_read: 2, requests_per_minute_write: 2 } });
      const head = await s.request('HEAD', '/v1/me', { key });
      assert.equal(head.status, 200);
      assertSuccessHeaders(head, 2, T0 + 180_000);
      assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
      const refusedHead = await s.request('HEAD', '/v1/me', { key });
      assert.equal(refusedHead.status, 429);
      assert.equal(refusedHead.headers.get('retry-after'), '60');
      assert.equal(refusedHead.headers.get('x-ratelimit-limit'), '2');
      assert429(await s.request('GET', '/v1/me', { key }), { detail: 'per minute', retryAfter: '60', limit: 2, resetMs: T0 + 180_000 });
      const write = await s.request('POST', '/v1/rate-limit-probe', { key, body: { name: 'x' } });
      assert.equal(write.status, 200);
      assertSuccessHeaders(write, 2, T0 + 180_000);
    });

    it('the burst layer answers 429 "per second" with Retry-After 1, and the next second is allowed', async () => {
      clock = T0 + 180_250;
      const { key } = await s.createAccountWithKey({ rateLimits: { burst_per_second: 2 } });
      const results = await Promise.all([1, 2, 3, 4].map(() => s.request('GET', '/v1/me', { key })));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 429, 429]);
      for (const r of results.filter((r) => r.status === 429)) {
        assert429(r, { detail: 'per second', retryAfter: '1', limit: 2, resetMs: T0 + 181_000 });
      }
      clock = T0 + 181_000;
      assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
    });

    it('the day layer answers 429 "per day" with Retry-After 86400 and the next UTC midnight', async () => {
      clock = T0 + 240_000;
      const { key } = await s.createAccountWithKey({ rateLimits: { requests_per_day_total: 2 } });
      assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
      assert.equal((await s.request('POST', '/v1/rate-limit-probe', { key, body: { name: 'x' } })).status, 200);
      const midnight = (Math.floor(clock / 86_400_000) + 1) * 86_400_000;
      assert429(await s.request('GET', '/v1/me', { key }), { detail: 'per day', retryAfter: '86400', limit: 2, resetMs: midnight });
    });

    it('requests without a usable key are limited to 30 a minute per IP, apart from any key', async () => {
      clock = T0 + 300_000;
      const { key } = await s.createAccountWithKey({ rateLimits: { burst_per_second: 50 } });
      const anonymous = [];
      for (let i = 0; i < 30; i++) {
        const headers: Record<string, string> = i % 2 === 0 ? {} : { authorization: 'Bearer not-a-key' };
        anonymous.push(await s.request('GET', '/v1/me', { headers }));
      }
      assert.deepEqual(new Set(anonymous.map((r) => r.status)), new Set([401]));
      for (const r of anonymous) assert.equal(r.headers.get('x-ratelimit-limit'), null);
      assert429(await s.request('GET', '/v1/me'), { detail: 'per minute', retryAfter: '60' });
      const authenticated = await s.request('GET', '/v1/me', { key });
      assert.equal(authenticated.status, 200, 'a key from the same IP is not charged for anonymous requests');
      clock = T0 + 360_000;
      assert.equal((await s.request('GET', '/v1/me')).status, 401, 'a new minute lets the IP try again');
    });
  });
}

describe('two servers sharing one Redis', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('enforce the limits of one server: exactly N of M > N simultaneous requests succeed in total', async () => {
    const prefix = redis.newPrefix();
    let clock = T0 + 599_100;
    const now = () => clock;
    const servers: TestServer[] = [];
    for (let i = 0; i < 2; i++) {
      const server = await startTestServer({ database, now, rateLimiter: sharedLimiter(redis, prefix, now) });
      closers.push(() => server.close());
      servers.push(server);
    }
    const [a, b] = servers as [TestServer, TestServer];
    const { key } = await a.createAccountWithKey({ rateLimits: { burst_per_second: 7 } });
    // Each server knows the key before the burst, a second earlier: the burst then waits on no key lookup, which
    // on a loaded machine can outlast its bound (a 503) with sixteen requests in flight.
    for (const server of servers) assert.equal((await server.request('GET', '/v1/me', { key })).status, 200);
    clock = T0 + 600_100;
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? a : b).request('GET', '/v1/me', { key })));
    assert.equal(results.filter((r) => r.status === 200).length, 7);
    for (const r of results.filter((r) => r.status !== 200))
      assert429(r, { detail: 'per second', retryAfter: '1', limit: 7, resetMs: T0 + 601_000 });
  });
});
