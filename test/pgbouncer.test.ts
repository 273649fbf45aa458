// Balcão through Debian's PgBouncer in transaction pooling mode, configured as deploy/pgbouncer.ini
// (nothing in ignore_startup_parameters), with BALCAO_DB_PREPARE=false: every command runs, every
// read route and the writes answer under concurrent load with no 5xx while PgBouncer multiplexes a
// handful of server connections, the events long poll wakes through BALCAO_LISTEN_DATABASE_URL, and
// the statement timeout still applies (SET LOCAL in each transaction's BEGIN message).
// It needs a PostgreSQL server behind the PgBouncer: the suite's (TEST_DATABASE_URL) when set, or a
// throwaway one of its own on the embedded pass, so it runs, and asserts, on both passes.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import postgres from 'postgres';
import { DEFAULT_DB_TIMEOUTS, openDatabase } from '../src/infra/db/engine/database.ts';
import { balcao } from './helpers/cli.ts';
import { type OwnPgBouncer, startPgBouncer } from './helpers/pgbouncer-server.ts';
import { type OwnPostgres, startOwnPostgres } from './helpers/postgres-server.ts';
import { type ServeProcess, spawnServe } from './helpers/serve-process.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

describe('PgBouncer in transaction pooling mode, BALCAO_DB_PREPARE=false', () => {
  let own: OwnPostgres | undefined;
  let adminUrl: string;
  let directUrl: string;
  let dbName: string;
  let bouncer: OwnPgBouncer;
  let env: Record<string, string>;
  let dataDir: string;

  before(async () => {
    if (process.env.TEST_DATABASE_URL) adminUrl = process.env.TEST_DATABASE_URL;
    else {
      own = await startOwnPostgres();
      adminUrl = own.url;
    }
    dbName = `balcao_pgb_${randomBytes(6).toString('hex')}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const direct = new URL(adminUrl);
    direct.pathname = `/${dbName}`;
    directUrl = direct.toString();
    // Two server connections for every client connection of the commands and the server (10 each):
    // statements of different clients share server connections, which named prepared statements do not survive.
    bouncer = await startPgBouncer(directUrl, 2);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-pgb-'));
    env = {
      DATABASE_URL: bouncer.url,
      BALCAO_DB_PREPARE: 'false',
      BALCAO_LISTEN_DATABASE_URL: directUrl,
      BALCAO_DATA_DIR: dataDir,
      BALCAO_WEBHOOK_ALLOW_PRIVATE: '1',
      // 24 clients queue on two server connections: on a starved machine the default waits (1.5 s for a
      // connection, 5 s a statement) would answer 503s that say nothing about PgBouncer. The bounds
      // themselves are tested in database-faults.test.ts.
      BALCAO_DB_ACQUIRE_TIMEOUT_MS: '20000',
      BALCAO_DB_STATEMENT_TIMEOUT_MS: '20000',
      // A new pooled connection logs in through PgBouncer, which may wait for a server connection first.
      BALCAO_DB_CONNECT_TIMEOUT_MS: '20000',
    };
  });

  after(async () => {
    await bouncer?.stop();
    if (dbName) {
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
    await own?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const run = async (args: string[]) => {
    const res = await balcao(args, env);
    assert.equal(res.code, 0, `balcao ${args.join(' ')}: ${res.stderr}`);
    return res.stdout ? JSON.parse(res.stdout) : undefined;
  };

  let accountId: string;
  let key: string;

  it('runs every command: migrate, accounts, keys, webhooks, export, import', async () => {
    const migrated = await run(['migrate', '--json']);
    assert.ok(migrated.applied.length > 0);
    assert.deepEqual((await run(['migrate', '--json'])).applied, []);
    const account = await run(['accounts', 'create', '--name', 'Loja PgBouncer', '--plan', 'enterprise', '--modules', 'all', '--json']);
    accountId = account.id;
    await run(['accounts', 'update', accountId, '--rate-limits', 'burst=100000,read=1000000,write=1000000,day=10000000', '--json']);
    const created = await run(['keys', 'create', '--account', accountId, '--name', 'pgb', '--scopes', '*:write', '--json']);
    key = created.key;
    assert.match(key, /^balcao_/);
    await run(['keys', 'list', '--account', accountId, '--json']);
    await run(['keys', 'revoke', (await run(['keys', 'create', '--account', accountId, '--name', 'gone', '--json'])).id, '--json']);
    await run(['webhooks', 'list', '--account', accountId, '--json']);
    await run(['accounts', 'list', '--json']);
  });

  it('serves every read route and the writes under concurrent load with no 5xx; the long poll wakes', async () => {
    const receiver = await startReceiver();
    const server: ServeProcess = await spawnServe(env);
    try {
      const call = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(new URL(route, server.url), {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
      };
      const endpoint = await call('POST', '/v1/webhook-endpoints', { url: receiver.url, enabled_events: ['sale.created'] });
      assert.equal(endpoint.status, 201, endpoint.text);

      // Every GET route without a path parameter, from the server's own description.
      const doc = await call('GET', '/v1/openapi.json');
      const lists = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)
        .filter(([p, ops]) => ops.get && !p.includes('{') && p.startsWith('/v1/') && !p.includes('openapi'))
        .map(([p]) => p);
      assert.ok(lists.length >= 10, `read routes: ${lists.join(', ')}`);

      // The long poll: held on an empty page, woken by the first sale through the direct listener.
      const tail = await call('GET', '/v1/events?sort=created_at&limit=100');
      assert.equal(tail.body.pagination.has_more, false);
      const cursor = encodeURIComponent(tail.body.pagination.next_cursor);
      const held = call('GET', `/v1/events?sort=created_at&limit=100&wait=20&cursor=${cursor}`);

      const statuses = new Map<number, number>();
      const failures: string[] = [];
      let sales = 0;
      const sale = () => ({ items: [{ catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 2, unit_price: 9.5 }] });
      const worker = async (w: number) => {
        for (let i = 0; i < 12; i++) {
          let res: { status: number; text: string; body: any };
          switch ((w + i) % 4) {
            case 0:
              res = await call('POST', '/v1/sales', sale(), { 'idempotency-key': randomUUID() });
              if (res.status === 201) {
                sales++;
                const id = res.body.data.id;
                const patched = await call('PATCH', `/v1/sales/${id}`, { status: 'completed' });
                statuses.set(patched.status, (statuses.get(patched.status) ?? 0) + 1);
                const got = await call('GET', `/v1/sales/${id}?include=items,status_history`);
                statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1);
              }
              break;
            case 1:
              res = await call('POST', '/v1/customers', { full_name: `Cliente ${w}-${i}`, email: `c${w}x${i}@example.com` });
              break;
            default:
              res = await call('GET', `${lists[(w * 12 + i) % lists.length]}?limit=5`);
          }
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500 || res.status === 0) failures.push(`${res.status} ${res.text.slice(0, 200)}`);
        }
      };
      await Promise.all(Array.from({ length: 24 }, (_, w) => worker(w)));
      const woken = await held;
      assert.equal(woken.status, 200);
      assert.ok(woken.body.data.length >= 1, 'the held long poll was woken by an event');
      // On failure, the server's warnings and errors (the access lines say only the status).
      const troubles = () =>
        server
          .logs()
          .split('\n')
          .filter((line) => /"level":[4-6]0/.test(line))
          .join('\n')
          .slice(-4000);
      assert.deepEqual(failures, [], `5xx answers: ${JSON.stringify([...statuses])}\n${troubles()}`);
      assert.ok(sales > 0);
      for (const status of statuses.keys()) assert.ok(status < 300, `status ${status}: ${JSON.stringify([...statuses])}`);
      assert.doesNotMatch(server.logs(), /prepared statement|unsupported startup parameter/);
      // Deliveries are woken by NOTIFY on the direct listener too.
      await receiver.until((r) => new Set(r.map((x) => x.id)).size >= sales, 30_000);

      // export, then import into a fresh account, through PgBouncer.
      const out = path.join(dataDir, 'export');
      await run(['export', '--account', accountId, '--format', 'ndjson', '--out', out, '--json']);
      assert.ok(fs.readFileSync(path.join(out, 'sales.ndjson'), 'utf8').split('\n').filter(Boolean).length >= sales);
      const file = path.join(dataDir, 'customers.ndjson');
      fs.writeFileSync(file, `${JSON.stringify({ id: randomUUID(), full_name: 'Importada', email: 'importada@example.com' })}\n`);
      await run(['import', '--account', accountId, file, '--json']);
      const found = await call('GET', '/v1/customers?filter[full_name][eq]=Importada');
      assert.equal(found.body.data.length, 1, found.text);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      await receiver.close();
    }
  });

  it('keeps the statement timeout: set per transaction, in the BEGIN message', async () => {
    const database = await openDatabase({
      databaseUrl: bouncer.url,
      dataDir: '',
      dbPrepare: false,
      dbTimeouts: { ...DEFAULT_DB_TIMEOUTS, statementMs: 300 },
    });
    try {
      const inside = await database.db
        .transaction()
        .execute(async (tx) => (await sql<{ statement_timeout: string }>`show statement_timeout`.execute(tx)).rows[0]?.statement_timeout);
      assert.equal(inside, '300ms');
      await assert.rejects(
        database.db.transaction().execute(async (tx) => sql`select pg_sleep(3)`.execute(tx)),
        (err: { code?: string }) => err.code === '57014',
      );
      // Outside a transaction a lone statement runs under the role's or database's setting
      // (docs/deployment.md: ALTER ROLE … SET statement_timeout), nothing sent per statement.
      const admin = postgres(directUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`ALTER DATABASE ${dbName} SET statement_timeout = '250ms'`);
      await admin.end();
      const fresh = await openDatabase({ databaseUrl: directUrl.replace(/\/[^/]*$/, `/${dbName}`), dataDir: '', dbPrepare: false });
      try {
        await assert.rejects(sql`select pg_sleep(3)`.execute(fresh.db), (err: { code?: string }) => err.code === '57014');
      } finally {
        await fresh.close();
      }
    } finally {
      await database.close();
    }
  });

  it('answers lone statements sent at once on one connection, with and without parameters', async () => {
    // The pool would send the second right behind the first on its busy connection; PgBouncer 1.18 gave the
    // server connection back at the first one's end and the second's answer never came (a 40 s wait).
    // A lost answer fails the statement after acquire + statement timeout + 0.5 s.
    const dbTimeouts = { ...DEFAULT_DB_TIMEOUTS, acquireMs: 5_000, statementMs: 5_000 };
    const database = await openDatabase({ databaseUrl: bouncer.url, dataDir: '', dbPrepare: false, dbPoolSize: 1, dbTimeouts });
    try {
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all([
          sql<{ n: number }>`select 1 as n from pg_sleep(0.01)`.execute(database.db),
          sql<{ n: number }>`select ${2}::int as n`.execute(database.db),
          sql<{ n: number }>`select 3 as n from pg_sleep(0.01)`.execute(database.db),
          sql<{ n: number }>`select ${4}::int as n`.execute(database.db),
        ]);
        assert.deepEqual(
          answers.map((a) => a.rows[0]?.n),
          [1, 2, 3, 4],
        );
      }
    } finally {
      await database.close();
    }
  });

  it('adds no round trip: the SET LOCALs travel in the BEGIN message, a lone read carries none', async () => {
    // A relay between the driver and PgBouncer that records what the client writes, in order.
    const writes: string[] = [];
    const target = new URL(bouncer.url);
    const relay = net.createServer((client) => {
      const server = net.connect(Number(target.port), '127.0.0.1');
      client.on('data', (chunk: Buffer) => {
        writes.push(chunk.toString('latin1'));
        server.write(chunk);
      });
      server.pipe(client);
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
      client.on('close', () => server.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayed = new URL(bouncer.url);
    relayed.port = String((relay.address() as net.AddressInfo).port);
    const database = await openDatabase({ databaseUrl: relayed.toString(), dataDir: '', dbPrepare: false, dbPoolSize: 1 });
    try {
      await sql`select 1`.execute(database.db); // connects: the start-up packet
      assert.ok(
        writes.every((w) => !w.includes('statement_timeout')),
        'no timeout in the start-up packet',
      );
      writes.length = 0;
      await sql`select ${1}::int as one`.execute(database.db);
      assert.ok(writes.length > 0);
      assert.ok(
        writes.every((w) => !/set local|statement_timeout/i.test(w)),
        'a lone read sends its statement only',
      );
      writes.length = 0;
      await database.db.transaction().execute(async (tx) => sql`select ${1}::int as one`.execute(tx));
      const begin = writes.findIndex((w) => w.includes('start transaction'));
      assert.ok(begin >= 0);
      // BEGIN, its SET LOCALs and the first statement go out in one write: one round trip, as without them.
      assert.match(
        writes[begin] as string,
        /start transaction; set local statement_timeout = \d+; set local idle_in_transaction_session_timeout = \d+/,
      );
      assert.match(writes[begin] as string, /select \$1::int as one/);
    } finally {
      await database.close();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});
