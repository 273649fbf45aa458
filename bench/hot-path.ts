// The hot path of every request: authenticate + rate limit + serialize, over real HTTP.
// Compares, in one run and as ratios, GET /v1/me with the authentication cache (steady state:
// no database round trip) against the same with the cache disabled (one lookup per request),
// and against a flood of unknown keys (negatively cached). Bounded: a fixed request count.
// Run: node --import tsx bench/hot-path.ts
import { buildApp } from '../src/app.ts';
import { benchAccount } from './bench-account.ts';
import { loadConfig } from '../src/config.ts';
import { generateApiKey } from '../src/domain/api-keys.ts';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../src/events/capture/setup.ts';

const UNKNOWN = generateApiKey('balcao', 'live').key;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4_000);
const CONCURRENCY = 16;

async function run(label: string, keyCache: { freshMs?: number; maxAgeMs?: number }, pickKey: (key: string) => string) {
  const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' });
  await prepareDatabase(database);
  const config = loadConfig({ PORT: '0' });
  const app = await buildApp({ config, database, logger: false, keyCache });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/me`;
  const { key } = await benchAccount(database.db, config.keyBrand);

  const statuses = new Map<number, number>();
  const call = async () => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${pickKey(key)}` } });
    await res.arrayBuffer();
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  };
  for (let i = 0; i < 200; i++) await call(); // warm up (JIT, connections, cache)
  statuses.clear();
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < REQUESTS) {
        sent += 1;
        await call();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const rps = REQUESTS / seconds;
  await app.close();
  await database.close();
  const codes = [...statuses].map(([k, v]) => `${k}×${v}`).join(' ');
  console.log(
    `${label.padEnd(44)} ${rps.toFixed(0).padStart(7)} req/s  ${((seconds * 1000) / REQUESTS).toFixed(3)} ms/req  rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB  [${codes}]`,
  );
  return rps;
}

const engine = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite';
console.log(`hot path: ${REQUESTS} requests, ${CONCURRENCY} concurrent, ${engine}`);
const cached = await run('GET /v1/me, key cached (steady state)', {}, (k) => k);
const uncached = await run('GET /v1/me, cache off (DB lookup each time)', { freshMs: 0, maxAgeMs: 0 }, (k) => k);
const unknown = await run('unknown well-formed key (401, then 429 per IP)', {}, () => UNKNOWN);
console.log(
  `ratio cached/uncached: ${(cached / uncached).toFixed(2)}×; unknown-key refusals vs cached 200s: ${(unknown / cached).toFixed(2)}×`,
);
