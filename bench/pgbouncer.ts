// `npm run bench` (BENCH_PART=pgbouncer for this part alone): what transaction pooling through
// PgBouncer costs against a direct connection. One throwaway PostgreSQL, one `balcao serve` at a time:
//   direct            the default: named prepared statements, timeouts in the start-up packet;
//   direct, unnamed   BALCAO_DB_PREPARE=false straight to PostgreSQL (the cost of the setting alone);
//   pgbouncer         BALCAO_DB_PREPARE=false through PgBouncer (deploy/pgbouncer.ini, transaction mode).
// Each runs a list read and a sale write with wrk (autocannon when wrk is missing) for
// BENCH_PGBOUNCER_SECONDS (default 5) at BENCH_PGBOUNCER_CONNECTIONS (default 20).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { createAccount } from '../src/accounts/account-repository.ts';
import { createKey } from '../src/accounts/key-repository.ts';
import { MODULES } from '../src/domain/modules.ts';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../src/events/capture/setup.ts';
import { startPgBouncer } from '../test/helpers/pgbouncer-server.ts';
import { spawnServe } from '../test/helpers/serve-process.ts';
import { startPostgres } from './throwaway-servers.ts';
import { type WrkLoad, type WrkResult, wrk, wrkInstalled } from './wrk.ts';

const SECONDS = Number(process.env.BENCH_PGBOUNCER_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_PGBOUNCER_CONNECTIONS ?? 20);
const UNLIMITED = { burst_per_second: 1e9, requests_per_minute_read: 1e9, requests_per_minute_write: 1e9, requests_per_day_total: 1e9 };

async function load(l: WrkLoad): Promise<WrkResult> {
  if (wrkInstalled()) return wrk(l);
  let n = 0;
  const result = await autocannon({
    url: l.url,
    method: l.method,
    connections: l.connections,
    duration: l.seconds,
    headers: l.headers,
    body: l.body,
    requests: l.idempotent
      ? [{ setupRequest: (req: any) => ({ ...req, headers: { ...req.headers, 'idempotency-key': `b-${process.pid}-${n++}` } }) }]
      : undefined,
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-pgb-'));
const pg = await startPostgres(dir);
const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
await admin.unsafe('CREATE DATABASE bench_pgb');
await admin.end();
const url = pg.url.replace(/\/[^/]*$/, '/bench_pgb');
const bouncer = await startPgBouncer(url, 8);
try {
  const database = await openDatabase({ databaseUrl: url, dataDir: '' });
  let key: string;
  try {
    await prepareDatabase(database);
    const account = await createAccount(database.db, {
      name: 'bench',
      plan_code: 'enterprise',
      modules: [...MODULES],
      rate_limit_overrides: UNLIMITED,
    });
    ({ key } = await createKey(database.db, {
      accountId: account.id,
      name: 'bench',
      mode: 'live',
      scopes: ['*:write'],
      allowedIps: [],
      expiresAt: null,
      brand: 'balcao',
    }));
  } finally {
    await database.close();
  }
  const setups: [string, Record<string, string>][] = [
    ['direct', { DATABASE_URL: url }],
    ['direct, unnamed', { DATABASE_URL: url, BALCAO_DB_PREPARE: 'false' }],
    ['pgbouncer', { DATABASE_URL: bouncer.url, BALCAO_DB_PREPARE: 'false', BALCAO_LISTEN_DATABASE_URL: url }],
  ];
  let seeded = false;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const sale = JSON.stringify({
    items: [{ catalog_type: 'product', catalog_item_id: '00000000-0000-4000-8000-000000000001', quantity: 1, unit_price: 10 }],
  });
  const loads = [
    ['GET /v1/sales?limit=20', { method: 'GET', path: '/v1/sales?limit=20' }],
    ['POST /v1/sales', { method: 'POST', path: '/v1/sales', body: sale, idempotent: true }],
  ] as const;
  const rows: string[] = [];
  // The reads first, every setup on the same data (100 sales); then the writes.
  for (const [what, l] of loads) {
    let baseline: number | undefined;
    for (const [name, env] of setups) {
      const server = await spawnServe({ ...env, LOG_LEVEL: 'warn', BALCAO_DB_POOL_SIZE: '10' });
      try {
        if (!seeded) {
          for (let i = 0; i < 100; i++)
            await fetch(`${server.url}/v1/sales`, { method: 'POST', headers: { ...headers, 'idempotency-key': `seed-${i}` }, body: sale });
          seeded = true;
        }
        const r = await load({ threads: 2, connections: CONNECTIONS, seconds: SECONDS, headers, url: `${server.url}${l.path}`, ...l });
        baseline ??= r.rps;
        rows.push(
          `| ${name} | ${what} | ${r.rps.toFixed(0)} | ${(r.rps / baseline).toFixed(2)}x | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.errors} |`,
        );
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    }
  }
  console.log(`\nPgBouncer against a direct connection (${CONNECTIONS} connections, ${SECONDS} s each)\n`);
  console.log('| setup | request | req/s | vs direct | p50 ms | p99 ms | errors |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  await bouncer.stop();
  pg.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
