// Write lanes (src/infra/db/statements/write-lanes.ts) on a PostgreSQL server of the test's own, whatever the suite's engine:
// a tenant's creations queued on one connection, one transaction after another's end, a failure kept to its own
// transaction, a bounded wait, and sales over HTTP through a database restart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { DEFAULT_DB_TIMEOUTS, type Database, openDatabase } from '../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../src/events/capture/setup.ts';
import { writeTransaction } from '../src/infra/db/statements/write-transaction.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { type OwnPostgres, startOwnPostgres } from './helpers/postgres-server.ts';
import { item, writer } from './helpers/write-fixtures.ts';
import { until } from './helpers/poll.ts';

/** A write transaction on the lane of `key`, handing `fn` its Kysely handle. */
const onLane = <T>(key: string, fn: (trx: Database['db']) => Promise<T>): Promise<T> =>
  writeTransaction(lanesDb(), { lane: key }, (tx) => fn(tx.db));
let lanesDb: () => Database['db'];

const backendPid = async (db: Database['db']): Promise<number> =>
  Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid);

describe('write lanes', () => {
  let pg: OwnPostgres;
  let database: Database;
  before(async () => {
    pg = await startOwnPostgres();
    database = await openDatabase({
      databaseUrl: pg.url,
      dataDir: '',
      dbPoolSize: 2,
      dbTimeouts: { ...DEFAULT_DB_TIMEOUTS, acquireMs: 400, statementMs: 10_000 },
    });
    await prepareDatabase(database);
    lanesDb = () => database.db;
    await sql`create table lane_probe (tx text, step int, seen int, at timestamptz default clock_timestamp())`.execute(database.db);
  });
  after(async () => {
    await database?.close();
    await pg?.destroy();
  });

  it("runs a lane's transactions on one connection, each after the one before has ended, even one awaiting answers", async () => {
    const { db } = database;
    const pids: number[] = [];
    const slow = onLane('tenant-a', async (trx) => {
      pids.push(await backendPid(trx));
      await sql`insert into lane_probe (tx, step) values ('slow', 1)`.execute(trx);
      await sql`select pg_sleep(0.2)`.execute(trx);
      await sql`insert into lane_probe (tx, step) values ('slow', 2)`.execute(trx);
    });
    // Begun while the first waits for its answers: it enters the lane once the first has sent its COMMIT, and so
    // sees both of its rows.
    const next = onLane('tenant-a', async (trx) => {
      pids.push(await backendPid(trx));
      await sql`insert into lane_probe (tx, step, seen) select 'next', 1, count(*) from lane_probe where tx = 'slow'`.execute(trx);
    });
    await Promise.all([slow, next]);
    assert.equal(pids.length, 2);
    assert.equal(pids[0], pids[1], 'both on the lane connection');
    const { rows } = await sql<{ seen: number }>`select seen from lane_probe where tx = 'next'`.execute(db);
    assert.deepEqual(
      rows.map((r) => Number(r.seen)),
      [2],
    );
  });

  it('sends a transaction opened inside a lane transaction to the pool, where it does not wait for its parent', async () => {
    const { db } = database;
    const [outer, inner] = await onLane('tenant-b', async (trx) => {
      const own = await backendPid(trx);
      const nested = await db.transaction().execute((t) => backendPid(t));
      return [own, nested];
    });
    assert.notEqual(outer, inner);
    // The lane still serves its tenant afterwards.
    assert.ok((await onLane('tenant-b', (t) => backendPid(t))) > 0);
  });

  it("keeps a failed transaction's failure and rows to itself: the lane's next transaction commits", async () => {
    const { db } = database;
    const failing = onLane('tenant-c', async (trx) => {
      await sql`insert into lane_probe (tx, step) values ('failed', 1)`.execute(trx);
      await sql`select 1 / 0`.execute(trx);
    });
    const following = onLane('tenant-c', async (trx) => {
      await sql`insert into lane_probe (tx, step) values ('after failure', 1)`.execute(trx);
    });
    await assert.rejects(failing, /division by zero/);
    await following;
    const { rows } = await sql<{ tx: string }>`select tx from lane_probe where tx in ('failed', 'after failure')`.execute(db);
    assert.deepEqual(
      rows.map((r) => r.tx),
      ['after failure'],
    );
  });

  it('bounds the wait for a lane: past acquireMs a transaction fails with a timeout, and the lane serves the next', async () => {
    let holderEnded = false;
    const holding = onLane('tenant-d', async (trx) => {
      await sql`select pg_sleep(2)`.execute(trx);
    }).finally(() => {
      holderEnded = true;
    });
    const waiting = onLane('tenant-d', (t) => backendPid(t));
    await assert.rejects(waiting, (err: Error & { code?: string }) => err.code === 'ACQUIRE_TIMEOUT');
    assert.equal(holderEnded, false, 'gave up while the holder still ran');
    await holding;
    assert.ok((await onLane('tenant-d', (t) => backendPid(t))) > 0);
  });

  it('gives its connection back to the pool once it has no transaction: a pool of two serves three tenants in turn', async () => {
    const { db } = database;
    for (const tenant of ['tenant-e', 'tenant-f', 'tenant-g']) {
      assert.ok((await onLane(tenant, (t) => backendPid(t))) > 0);
      await db.transaction().execute((t) => backendPid(t));
    }
    // Two tenants at once hold both connections; a third waits for one of them, within the acquire bound.
    const pids = await Promise.all(
      ['tenant-e', 'tenant-f', 'tenant-g'].map((tenant) =>
        onLane(tenant, async (t) => {
          await sql`select pg_sleep(0.05)`.execute(t);
          return backendPid(t);
        }),
      ),
    );
    assert.equal(pids.length, 3);
  });

  it('reserves another connection once its own has ended with the server, and fails the transaction it ended', async () => {
    const { db } = database;
    const first = await onLane('tenant-h', (t) => backendPid(t));
    // Ended inside a transaction (the server stopped and started again): its later statements fail, nothing of it
    // commits, and the lane's next transaction runs on a new connection.
    const inside = onLane('tenant-h', async (trx) => {
      await sql`insert into lane_probe (tx, step) values ('ended inside', 1)`.execute(trx);
      await pg.stop();
      await pg.start();
      await sql`insert into lane_probe (tx, step) values ('ended inside', 2)`.execute(trx);
    });
    await assert.rejects(inside, (err: Error & { code?: string }) => ['57P01', 'CONNECTION_CLOSED'].includes(String(err.code)));
    const { rows } = await sql<{ n: number }>`select count(*) as n from lane_probe where tx = 'ended inside'`.execute(db);
    assert.equal(Number(rows[0]!.n), 0);
    const next = await onLane('tenant-h', (t) => backendPid(t));
    assert.ok(next > 0 && next !== first, `another backend (${first} then ${next})`);
  });
});

describe('sales on write lanes over HTTP', () => {
  let pg: OwnPostgres;
  let database: Database;
  let s: TestServer;
  before(async () => {
    pg = await startOwnPostgres();
    database = await openDatabase({ databaseUrl: pg.url, dataDir: '', dbTimeouts: { ...DEFAULT_DB_TIMEOUTS, statementMs: 5_000 } });
    await prepareDatabase(database);
    s = await startTestServer({ database });
  });
  after(async () => {
    // The harness does not close a database it was given.
    await s?.close();
    await database?.close();
    await pg?.destroy();
  });

  const post = (key: string, idempotencyKey?: string, catalogItem?: string) =>
    s.request('POST', '/v1/sales', {
      key,
      body: { items: [item(catalogItem ? { catalog_item_id: catalogItem } : {})] },
      headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
    });

  it('numbers the concurrent sales of two accounts on their own, a repeated key giving its first sale again', async () => {
    const a = await writer(s);
    const b = await writer(s);
    // Each key's first request looks it up (bounded at 1.8 s); forty cold lookups at once on a starved machine passed
    // that bound (a 503). The keys are known before the burst, as a client's are after its first call.
    for (const k of [a, b]) assert.equal((await s.request('GET', '/v1/me', { key: k.key })).status, 200);
    const productOf = (k: number) => `00000000-0000-4000-8000-${String(k).padStart(12, '0')}`;
    const results = await Promise.all([
      ...Array.from({ length: 30 }, (_, i) => post(a.key, `a-${i % 25}`, productOf(i % 25))),
      ...Array.from({ length: 10 }, () => post(b.key)),
    ]);
    for (const r of results) assert.equal(r.status, 201, r.text);
    const numbers = (from: number, to: number) =>
      [...new Set(results.slice(from, to).map((r) => Number(r.body.data.transaction_number)))].sort((x, y) => x - y);
    assert.deepEqual(
      numbers(0, 30),
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
    for (let i = 25; i < 30; i++) assert.equal(results[i]!.body.data.id, results[i - 25]!.body.data.id, 'the same key, the same sale');
    assert.deepEqual(
      numbers(30, 40),
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
  });

  it('answers 503 while PostgreSQL is down, and numbers the next sale after the last once it is back', async () => {
    const { key } = await writer(s);
    assert.equal((await post(key)).body.data.transaction_number, '1');
    await pg.stop();
    try {
      const down = await post(key);
      assert.equal(down.status, 503, down.text);
    } finally {
      await pg.start();
    }
    await until('ready again', async () => (await fetch(`${s.url}/health/ready`)).status === 200, { withinMs: 20_000 });
    const back = await post(key);
    assert.equal(back.status, 201, back.text);
    assert.equal(back.body.data.transaction_number, '2');
  });
});
