// Keyset pagination: page 1 against a page deep inside a large account, over real HTTP, side by
// side in one run, with an OFFSET query of the same depth as the contrast keyset avoids. Prints
// the plan of the deep page (an index range scan, no Sort, no OFFSET). Bounded: fixed counts.
// Run: node --import tsx bench/pagination.ts [records]   (default 200000; DATABASE_URL for PostgreSQL)
import { sql } from 'kysely';
import { createAccount } from '../src/accounts/account-repository.ts';
import { buildApp } from '../src/app.ts';
import { benchAccount } from './bench-account.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../src/events/capture/setup.ts';
import { encodeCursor } from '../src/query/cursor.ts';

const RECORDS = Math.min(Number(process.argv[2] ?? 200_000), 2_000_000);
const SAMPLES = 200;
const PAGE = 100;

const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' });
await prepareDatabase(database);
const { db } = database;
const config = loadConfig({ PORT: '0' });
const { accountId, key } = await benchAccount(db, config.keyBrand);
const account = { id: accountId };

const t = performance.now();
// Another account's rows too, so the tenant condition has something to exclude.
for (const [team, count] of [
  [account.id, RECORDS],
  [(await createAccount(db, { name: 'other', plan_code: 'free' })).id, RECORDS / 4],
] as const) {
  await sql`
    INSERT INTO customers (team_id, mode, full_name, email, created_at)
    SELECT ${team}::uuid, 'live', 'Cliente ' || g, 'c' || g || '@example.com',
           timestamptz '2024-01-01' + (g * interval '1 minute') + ((g % 7) * interval '1 microsecond')
    FROM generate_series(1, ${Math.floor(count)}) AS g`.execute(db);
}
await sql`ANALYZE customers`.execute(db);
console.log(
  `pagination: ${RECORDS} customers (+${RECORDS / 4} in another account) loaded in ${((performance.now() - t) / 1000).toFixed(1)} s on ${database.engine}`,
);

const app = await buildApp({ config, database, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/customers?limit=${PAGE}`;

// The cursor of the page that starts DEPTH rows in, as a client walking the list would hold it.
const depth = RECORDS - 2 * PAGE;
const boundary = await sql<{ v: string; id: string }>`
  SELECT to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS v, id FROM customers
  WHERE team_id = ${account.id} AND mode = 'live' ORDER BY created_at DESC, id DESC OFFSET ${depth - 1} LIMIT 1`.execute(db);
const row = boundary.rows[0]!;
const deepCursor = encodeCursor('-created_at', row.v, row.id);

async function time(label: string, fn: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 20; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const p50 = samples[Math.floor(SAMPLES / 2)]!;
  console.log(`${label.padEnd(52)} p50 ${p50.toFixed(2)} ms  p95 ${samples[Math.floor(SAMPLES * 0.95)]!.toFixed(2)} ms`);
  return p50;
}

const get = (url: string) => async () => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data: unknown[] };
  if (res.status !== 200 || body.data.length !== PAGE) throw new Error(`unexpected ${res.status}`);
};

const first = await time('HTTP page 1 (no cursor)', get(base));
const deep = await time(`HTTP page at row ${depth} (keyset cursor)`, get(`${base}&cursor=${deepCursor}`));
const offset = await time(`SQL OFFSET ${depth} (what keyset avoids)`, async () => {
  await sql`SELECT id FROM customers WHERE team_id = ${account.id} AND mode = 'live' ORDER BY created_at DESC, id DESC OFFSET ${depth} LIMIT ${PAGE}`.execute(
    db,
  );
});
console.log(`ratio deep/page 1: ${(deep / first).toFixed(2)}×   OFFSET/deep keyset: ${(offset / deep).toFixed(1)}×`);

const plan = await sql<Record<string, string>>`EXPLAIN SELECT id, full_name FROM customers
  WHERE team_id = ${account.id} AND mode = 'live' AND (created_at, id) < (${row.v}::timestamptz, ${row.id}::uuid)
  ORDER BY created_at DESC, id DESC LIMIT ${PAGE + 1}`.execute(db);
console.log('plan of the deep page:');
for (const line of plan.rows) console.log(`  ${Object.values(line)[0]}`);

await app.close();
await database.close();
