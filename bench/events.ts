// Events and webhooks, in one run and as ratios:
//   1. the cost of events on POST /v1/sales: the whole request (Fastify's pipeline through `inject`, 10 items,
//      an Idempotency-Key, the write log) with and without its event: the goal (≤ 10 %);
//   2. the same on the write engine alone (createRecord, one item): the event's share of the bare creation,
//      with and without one subscribed endpoint (a delivery row per write);
//   3. deliveries per second from the worker to a local receiving HTTP server.
// Bounded: fixed counts. Run: node --import tsx bench/events.ts [writes] [deliveries]
import http from 'node:http';
import { sql } from 'kysely';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { CommitNotifier } from '../src/events/commit-notifier.ts';
import { eventRecorder } from '../src/events/record-event.ts';
import { type Database, openDatabase } from '../src/infra/db/database.ts';
import { migrate } from '../src/infra/db/migrate.ts';
import { sales } from '../src/resources/sales.ts';
import { createRecord } from '../src/resources/write-engine.ts';
import { keepEndpointsFlag } from '../src/webhooks/endpoint-repository.ts';
import { createKey } from '../src/accounts/key-repository.ts';
import { benchAccount } from './bench-account.ts';
import { freshDatabase } from './throwaway-servers.ts';

const WRITES = Number(process.argv[2] ?? 3000);
const DELIVERIES = Number(process.argv[3] ?? 1000);
const CONCURRENCY = 8;
/** Pairs of POST runs (with its event, without): a run is known to about ±10 % on a shared 2-core machine, and the
 *  event costs less than that, so one pair says little. */
const POST_ROUNDS = Number(process.env.BENCH_EVENT_ROUNDS ?? 5);
const engine = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite';

const saleBody = () => ({
  status: 'pending',
  items: [{ catalog_type: 'product', catalog_item_id: '5f0c6f5e-8d55-4d6c-9d7a-7f6d1d1b0a01', quantity: 2, unit_price: 19.99 }],
});

/** A database of its own for each run: on one shared database, every run after the first would write into
 *  larger tables than the one before it, and the variants would not compare. */
async function fresh(): Promise<Database> {
  const adminUrl = process.env.DATABASE_URL;
  let databaseUrl: string | undefined;
  let drop = async () => {};
  if (adminUrl) ({ url: databaseUrl, drop } = await freshDatabase(adminUrl, 'events'));
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://' });
  await migrate(database.db);
  const close = database.close.bind(database);
  return Object.assign(database, { close: () => close().finally(drop) });
}

/** Sales written before a run is timed: tables the size of a shop's first days, not empty ones. */
const WARM_UP = 1000;

/**
 * Statistics for the tables the warm-up wrote, as autovacuum gives a server in use. A run is shorter than its visit,
 * and a fresh database has none: PostgreSQL's plans made then (a write's generic plan, a foreign key's check) scan
 * the tables they should look up by index, and keep doing so as the tables grow, until an ANALYZE replaces them.
 * With no statistics, a new sale's number was looked up by a scan of the account's sales; with statistics of a few
 * hundred rows, the items' foreign-key checks read the sales sequentially. Which runs got an autovacuum visit used to
 * decide the ratio: 0.69× to 1.56× across runs of one build (docs/performance.md).
 */
async function analyze(database: Database): Promise<void> {
  await sql`ANALYZE`.execute(database.db);
}

async function pool(count: number, fn: () => Promise<unknown>): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started < count) {
        started += 1;
        await fn();
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

async function saleWrites(label: string, withEvents: boolean, endpoint: boolean): Promise<number> {
  const database = await fresh();
  const { accountId } = await benchAccount(database.db, 'balcao');
  const tenant = { accountId, mode: 'live' as const };
  if (endpoint)
    await database.db
      .insertInto('webhook_endpoints')
      .values({
        team_id: accountId,
        mode: 'live',
        url: 'https://hooks.example.com/x',
        enabled_events: ['*'],
        secret: 'whsec_x',
        enabled: true,
      })
      .execute();
  // Inserted as SQL, so the flag events read is set as an endpoint change through the API would set it.
  if (endpoint) await keepEndpointsFlag(database.db, tenant);
  // As served: the wake-ups of the events leave after their commits (src/events/commit-notifier.ts).
  const notifier = new CommitNotifier(database.db);
  const options = withEvents ? eventRecorder(notifier)('bench') : {};
  for (let i = 0; i < WARM_UP; i++) await createRecord(database.db, sales, tenant, saleBody(), options); // warm up
  await analyze(database);
  const rate = await pool(WRITES, () => createRecord(database.db, sales, tenant, saleBody(), options));
  await notifier.flushed();
  await database.close();
  console.log(`${label.padEnd(52)} ${rate.toFixed(0).padStart(6)} sales/s`);
  return rate;
}

/** POST /v1/sales as a client sends it (10 items, an Idempotency-Key each), through the app's whole pipeline. */
async function salePosts(label: string, withEvents: boolean): Promise<number> {
  const database = await fresh();
  const config = loadConfig({ PORT: '0' });
  const { accountId } = await benchAccount(database.db, config.keyBrand);
  const { key } = await createKey(database.db, {
    accountId,
    name: 'bench writes',
    mode: 'live',
    scopes: ['*:write'],
    allowedIps: [],
    expiresAt: null,
    brand: config.keyBrand,
  });
  const app = await buildApp({ config, database, logger: false, recordEvents: withEvents });
  const payload = JSON.stringify({ items: Array.from({ length: 10 }, () => saleBody().items[0]) });
  let sent = 0;
  const post = async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sales',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `bench-${sent++}` },
      payload,
    });
    if (res.statusCode !== 201) throw new Error(`POST /v1/sales answered ${res.statusCode}: ${res.body}`);
  };
  for (let i = 0; i < WARM_UP; i++) await post(); // warm up
  await analyze(database);
  const rate = await pool(WRITES, post);
  await app.close();
  await database.close();
  console.log(`${label.padEnd(52)} ${rate.toFixed(0).padStart(6)} sales/s`);
  return rate;
}

async function deliveries(): Promise<number> {
  let received = 0;
  let onAll: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    onAll = resolve;
  });
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.end('ok');
      received += 1;
      if (received === DELIVERIES) onAll();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;

  const database = await fresh();
  const config = loadConfig({ PORT: '0', BALCAO_WEBHOOK_ALLOW_PRIVATE: '1' });
  const { accountId } = await benchAccount(database.db, config.keyBrand);
  const tenant = { accountId, mode: 'live' as const };
  await database.db
    .insertInto('webhook_endpoints')
    .values({ team_id: accountId, mode: 'live', url, enabled_events: ['*'], secret: 'whsec_QmFsY2FvQmVuY2hTZWNyZXQxMjM0NTY3OA==' })
    .execute();
  await keepEndpointsFlag(database.db, tenant);
  // Queued before any worker runs, then drained by one: the worker's pace alone.
  const notifier = new CommitNotifier(database.db);
  const recorded = eventRecorder(notifier)('bench');
  await pool(DELIVERIES, () => createRecord(database.db, sales, tenant, saleBody(), recorded));
  await notifier.flushed();
  const app = await buildApp({ config, database, logger: false });
  const t0 = performance.now();
  await app.listen({ host: '127.0.0.1', port: 0 });
  await all;
  const rate = DELIVERIES / ((performance.now() - t0) / 1000);
  await app.close();
  await database.close();
  receiver.close();
  console.log(`${'deliveries to a local receiver'.padEnd(52)} ${rate.toFixed(0).padStart(6)} deliveries/s`);
  return rate;
}

console.log(`events: ${WRITES} sales per run, ${CONCURRENCY} concurrent; ${DELIVERIES} deliveries; ${engine}`);
// Interleaved rounds, in alternating order: a shared machine's noise and drift hit every variant alike. Each run on a
// database of its own.
// The first app of the process pays V8's compilation of the whole pipeline (0.5× the later runs' rate), and the first
// run of each variant its own paths' (a first run without events came out 0.8× the later ones): neither is counted.
await salePosts('POST /v1/sales, warm-up of the process (not counted)', true);
await salePosts('POST /v1/sales, warm-up, events off (not counted)', false);
const postsWithout: number[] = [];
const postsWith: number[] = [];
for (let round = 0; round < POST_ROUNDS; round++) {
  const off = () => salePosts('POST /v1/sales, events off', false).then((rate) => postsWithout.push(rate));
  const on = () => salePosts('POST /v1/sales, with its event', true).then((rate) => postsWith.push(rate));
  for (const run of round % 2 ? [on, off] : [off, on]) await run();
}
const without: number[] = [];
const withEvents: number[] = [];
const withEndpoint: number[] = [];
for (let round = 0; round < 3; round++) {
  const runs = [
    () => saleWrites('create sale, events off', false, false).then((rate) => without.push(rate)),
    () => saleWrites('create sale, with its event', true, false).then((rate) => withEvents.push(rate)),
    () => saleWrites('create sale, event + one subscribed endpoint', true, true).then((rate) => withEndpoint.push(rate)),
  ];
  for (const run of round % 2 ? runs.reverse() : runs) await run();
}
await deliveries();
const best = (xs: number[]) => Math.max(...xs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ratios = (f: (xs: number[]) => number) =>
  `with events / without ${(f(withEvents) / f(without)).toFixed(2)}×, with an endpoint / without ${(f(withEndpoint) / f(without)).toFixed(2)}×`;
const posts = (f: (xs: number[]) => number) => (f(postsWith) / f(postsWithout)).toFixed(2);
// Each round's two runs follow each other: their ratio sees the least drift.
const pairRatios = postsWith.map((rate, i) => rate / (postsWithout[i] as number));
console.log(
  `POST /v1/sales with its event / without: ${posts(best)}× of the best runs, ${posts(median)}× of the medians, ` +
    `${median(pairRatios).toFixed(2)}× the median of the ${POST_ROUNDS} rounds' ratios (${pairRatios.map((r) => r.toFixed(2)).join(', ')}) (goal ≥ 0.90)`,
);
console.log(`the engine alone: ratios of the best runs: ${ratios(best)}; of the medians: ${ratios(median)}`);
