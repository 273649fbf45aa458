// Rate-limit charge cost on each store, and with Redis unreachable (fail open must add no latency per request).
// Run: node --import tsx bench/rate-limit.ts [redis-url]   (default redis://127.0.0.1:6379; bounded loops)
import net from 'node:net';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { AuthContext } from '../src/domain/tenant.ts';
import { createRateLimiter, type RateLimiter } from '../src/http/rate-limit.ts';

const REQUESTS = 20_000;
const CONCURRENCY = 50;
const redisUrl = process.argv[2] ?? 'redis://127.0.0.1:6379';

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child: () => quiet, level: 'silent' };
const logger = quiet as unknown as FastifyBaseLogger;
const reply = { headers: () => reply, header: () => reply } as unknown as FastifyReply;
const auth = {
  keyId: 'bench-key',
  rateLimits: { burst_per_second: 1e9, requests_per_minute_read: 1e9, requests_per_minute_write: 1e9, requests_per_day_total: 1e9 },
} as AuthContext;

async function measure(name: string, limiter: RateLimiter): Promise<void> {
  await limiter.chargeKey(auth, 'read', reply); // connects (or gives up connecting) before timing
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next += 1;
        const t = performance.now();
        await limiter.chargeKey(auth, next % 3 === 0 ? 'write' : 'read', reply);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0).toFixed(3);
  console.log(
    `${name.padEnd(28)} ${Math.round((REQUESTS / elapsed) * 1000)} charges/s  p50 ${pct(50)} ms  p99 ${pct(99)} ms  max ${pct(100)} ms  store ${JSON.stringify(limiter.status())}`,
  );
  await limiter.close();
}

const closedPort = await new Promise<number>((resolve) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as net.AddressInfo;
    server.close(() => resolve(port));
  });
});

await measure('memory', createRateLimiter({ logger }));
await measure('redis', createRateLimiter({ redisUrl, logger, keyPrefix: `bench:${Date.now()}:` }));
await measure('redis unreachable (fail open)', createRateLimiter({ redisUrl: `redis://127.0.0.1:${closedPort}`, logger }));
