// Events and webhooks, in one run and as ratios:
//   1. the cost of events on creating a sale: the write engine's POST /v1/sales path with and
//      without the event (record read back, counter, event row, deliveries, NOTIFY), and with one
//      subscribed endpoint (a delivery row per write);
//   2. deliveries per second from the worker to a local receiving HTTP server.
// Bounded: fixed counts. Run: node --import tsx bench/events.ts [writes] [deliveries]
import http from 'node:http';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { eventRecorder } from '../src/events/record-event.ts';
import { type Database, openDatabase } from '../src/infra/db/database.ts';
import { migrate } from '../src/infra/db/migrate.ts';
import { sales } from '../src/resources/sales.ts';
import { createRecord } from '../src/resources/write-engine.ts';
import { benchAccount } from './bench-account.ts';
import { freshDatabase } from './throwaway-servers.ts';

const WRITES = Number(process.argv[2] ?? 3000);
const DELIVERIES = Number(process.argv[3] ?? 1000);
const CONCURRENCY = 8;
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
  const options = withEvents ? { onWritten: eventRecorder('bench') } : {};
  for (let i = 0; i < 100; i++) await createRecord(database.db, sales, tenant, saleBody(), options); // warm up
  const rate = await pool(WRITES, () => createRecord(database.db, sales, tenant, saleBody(), options));
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
  // Queued before any worker runs, then drained by one: the worker's pace alone.
  await pool(DELIVERIES, () => createRecord(database.db, sales, tenant, saleBody(), { onWritten: eventRecorder('bench') }));
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
// Interleaved rounds: a shared machine's noise hits every variant alike. Each run on a database of its own.
const without: number[] = [];
const withEvents: number[] = [];
const withEndpoint: number[] = [];
for (let round = 0; round < 3; round++) {
  without.push(await saleWrites('create sale, events off', false, false));
  withEvents.push(await saleWrites('create sale, with its event', true, false));
  withEndpoint.push(await saleWrites('create sale, event + one subscribed endpoint', true, true));
}
await deliveries();
const best = (xs: number[]) => Math.max(...xs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ratios = (f: (xs: number[]) => number) =>
  `with events / without ${(f(withEvents) / f(without)).toFixed(2)}×, with an endpoint / without ${(f(withEndpoint) / f(without)).toFixed(2)}×`;
console.log(`ratios of the best runs: ${ratios(best)}; of the medians: ${ratios(median)} (goal ≥ 0.90)`);
