// Redis going away (DECISIONS B.16): the limiter fails open to per-instance counters, logs each transition
// once, reports itself unhealthy, and goes back to the shared counters by itself.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { FastifyReply } from 'fastify';
import type { AuthContext } from '../src/domain/tenant.ts';
import { createRateLimiter, type RateLimiter } from '../src/http/rate-limit.ts';
import { recordingLogger } from './helpers/recording-logger.ts';
import { authWith } from './helpers/auth-context.ts';
import { startTestRedis } from './helpers/redis-server.ts';
import { startTestServer } from './helpers/harness.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';
import { until } from './helpers/poll.ts';

const redis = await startTestRedis();
after(() => redis.close());

const T0 = Date.UTC(2031, 4, 6, 12, 0, 0);

const reply = { headers: () => reply, header: () => reply } as unknown as FastifyReply;

/** How many of `times` sequential reads the limiter lets through. */
async function allowedOf(limiter: RateLimiter, auth: AuthContext, times: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < times; i++) {
    try {
      await limiter.chargeKey(auth, 'read', reply);
      ok += 1;
    } catch (error) {
      assert.equal((error as { code?: string }).code, 'rate-limit-exceeded');
    }
  }
  return ok;
}

describe('the Redis store when Redis fails', () => {
  const toClose: Array<{ close(): Promise<void> }> = [];
  after(async () => {
    for (const item of toClose.reverse()) await item.close();
  });

  async function setup() {
    const proxy = await TcpProxy.start(redis.host, redis.port);
    const prefix = redis.newPrefix();
    let t = T0 + 100;
    const clock = { now: () => t, advance: (ms: number) => (t += ms) };
    const { logger, entries } = recordingLogger();
    const limiter = createRateLimiter({ redisUrl: proxy.url, keyPrefix: prefix, now: clock.now, logger });
    // A second instance that always reaches Redis directly: it shows whether the first one counts in Redis.
    const peer = createRateLimiter({ redisUrl: redis.url, keyPrefix: prefix, now: clock.now, logger: recordingLogger().logger });
    toClose.push({ close: () => proxy.stop() }, limiter, peer);
    const logs = (level: string) => entries.filter((e) => e.level === level);
    return { proxy, clock, limiter, peer, logs };
  }

  test('Redis going away: requests are still answered with per-instance limits, logged once, then shared again when it is back', async () => {
    const { proxy, clock, limiter, peer, logs } = await setup();
    const auth = authWith({ burst_per_second: 3 });

    assert.equal(await allowedOf(limiter, auth, 2), 2);
    assert.equal(await allowedOf(peer, auth, 2), 1, 'both instances count in the same Redis counter');
    assert.deepEqual(limiter.status(), { store: 'redis', healthy: true });

    await proxy.stop();
    clock.advance(1_000);
    assert.equal(await allowedOf(limiter, auth, 10), 3, 'fails open, yet this instance still enforces the burst limit');
    assert.deepEqual(limiter.status(), { store: 'redis', healthy: false });
    clock.advance(1_000);
    assert.equal(await allowedOf(limiter, auth, 10), 3);
    assert.equal(logs('warn').length, 1, 'the outage is logged once, not per request');
    assert.match(logs('warn')[0]?.msg ?? '', /failing open/);

    await proxy.resume();
    await until('the limiter is back on Redis', () => limiter.status().healthy);
    assert.equal(logs('warn').length, 1);
    assert.equal(logs('info').filter((e) => /reachable again/.test(e.msg)).length, 1, 'the recovery is logged once');

    clock.advance(1_000);
    assert.equal(await allowedOf(peer, auth, 3), 3);
    assert.equal(await allowedOf(limiter, auth, 1), 0, 'counts are shared through Redis again');
  });

  test('a hung Redis: requests fall back after the command timeout, and a probe brings the limiter back', async () => {
    const { proxy, limiter, peer, logs } = await setup();
    const auth = authWith({ burst_per_second: 4 });
    assert.equal(await allowedOf(limiter, auth, 1), 1);
    assert.equal(limiter.status().healthy, true);

    proxy.freeze();
    assert.equal(await allowedOf(limiter, auth, 6), 4, 'answers from its own counters');
    assert.equal(limiter.status().healthy, false);
    assert.equal(logs('warn').length, 1);

    proxy.thaw();
    await until('the probe finds Redis answering again', () => limiter.status().healthy);
    assert.equal(logs('warn').length, 1);
    // Redis executed the held command when it woke up: the counter of this second holds the request made
    // before the freeze and the one that timed out (a timed-out charge may still count; never the fallback ones).
    assert.equal(await allowedOf(peer, auth, 4), 2);
    assert.equal(await allowedOf(limiter, auth, 1), 0);
  });

  test('Redis unreachable at startup: after the bounded wait the requests are answered, and the limiter joins Redis once it is up', async () => {
    const proxy = await TcpProxy.start(redis.host, redis.port);
    await proxy.stop();
    const { logger, entries } = recordingLogger();
    const limiter = createRateLimiter({ redisUrl: proxy.url, keyPrefix: redis.newPrefix(), logger });
    toClose.push({ close: () => proxy.stop() }, limiter);

    await limiter.start(300);
    assert.deepEqual(limiter.status(), { store: 'redis', healthy: false }, 'the bounded start-up wait ran out');
    assert.equal(await allowedOf(limiter, authWith({}), 3), 3);
    assert.deepEqual(limiter.status(), { store: 'redis', healthy: false });
    assert.equal(entries.filter((e) => e.level === 'warn').length, 1);

    await proxy.resume();
    await until('the limiter connects', () => limiter.status().healthy);
    assert.equal(await allowedOf(limiter, authWith({}), 1), 1);
  });

  test('with REDIS_URL the server does not listen until Redis answers, then counts in Redis from the first request', async () => {
    const proxy = await TcpProxy.start(redis.host, redis.port);
    await proxy.refuse();
    const prefix = redis.newPrefix();
    const { logger, entries } = recordingLogger();
    const limiter = createRateLimiter({ redisUrl: proxy.url, keyPrefix: prefix, logger });
    toClose.push({ close: () => proxy.stop() }, limiter);
    let listening = false;
    const starting = startTestServer({ rateLimiter: limiter }).then((server) => {
      listening = true;
      return server;
    });
    // Refused three times, the limiter is still trying: the server must not be listening yet.
    await until('the limiter has been refused three times', () => proxy.refused >= 3);
    assert.equal(listening, false, 'no listener while Redis has not answered');
    await proxy.resume();
    const server = await starting;
    toClose.push(server);
    assert.deepEqual(limiter.status(), { store: 'redis', healthy: true });
    assert.equal(entries.filter((e) => e.level === 'warn').length, 0, 'it never failed open');
    assert.equal((await server.request('GET', '/health/ready')).status, 200);
  });
});
