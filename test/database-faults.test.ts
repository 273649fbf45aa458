// Database faults on a PostgreSQL of this test's own, which it stops and starts with traffic running: every
// request answers 503 quickly while it is away, readiness says so, and service resumes by itself when it is
// back; a locked table ends in a statement timeout (503) instead of holding requests and the pool.
// The bounds below are behaviour bounds (2 s, 5 s) plus a margin for a loaded machine, not speed claims.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { DEFAULT_DB_TIMEOUTS, type Database, openDatabase } from '../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../src/events/capture/setup.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { type OwnPostgres, startOwnPostgres } from './helpers/postgres-server.ts';
import { until } from './helpers/poll.ts';
import { spawnServe } from './helpers/serve-process.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';

/** Added to every bound: the suite shares two cores with other suites. */
const LOAD_MARGIN_MS = 1_500;

interface Sample {
  startedAt: number;
  ms: number;
  status: number;
  retryAfter: string | null;
  contentType: string | null;
}

async function timed(url: string, key?: string): Promise<Sample> {
  const startedAt = Date.now();
  const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  await res.arrayBuffer();
  return {
    startedAt,
    ms: Date.now() - startedAt,
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    contentType: res.headers.get('content-type'),
  };
}

/** Waits until `probe` holds, within `withinMs` (the bound under test); resolves with the ms it took. */
async function waitFor(what: string, withinMs: number, probe: () => Promise<boolean>): Promise<number> {
  const startedAt = Date.now();
  await until(what, probe, { withinMs });
  return Date.now() - startedAt;
}

describe('database faults', () => {
  let pg: OwnPostgres;
  let s: TestServer;
  let database: Database;
  let keys: string[];
  before(async () => {
    pg = await startOwnPostgres();
    database = await openDatabase({ databaseUrl: pg.url, dataDir: '', dbTimeouts: { ...DEFAULT_DB_TIMEOUTS, statementMs: 1_000 } });
    await prepareDatabase(database);
    s = await startTestServer({ database });
    const { key, account } = await s.createAccountWithKey();
    keys = [key, (await s.createKey(account.id)).key, (await s.createKey(account.id)).key];
  });
  after(async () => {
    // The harness does not close a database it was given.
    await s?.close();
    await database?.close();
    await pg?.destroy();
  });

  it('PostgreSQL stopped under traffic: 503 with Retry-After at once, not ready, then service resumes by itself', async () => {
    const samples: Sample[] = [];
    let running = true;
    // Steady traffic of every key, about 10 requests a second, through the whole test.
    const traffic = (async () => {
      for (let i = 0; running && i < 2_000; i++) {
        samples.push(await timed(`${s.url}/v1/customers?limit=1`, keys[i % keys.length]));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await waitFor('traffic served', 10_000, async () => samples.filter((x) => x.status === 200).length >= 5);

      await pg.stop();
      const stoppedAt = Date.now();
      const unready = await waitFor('readiness says not ready', 2_000 + LOAD_MARGIN_MS, async () => {
        return (await timed(`${s.url}/health/ready`)).status === 503;
      });
      assert.ok(unready <= 2_000 + LOAD_MARGIN_MS);
      // Hold the outage for 30 requests (about 3 s), so lookups and pool waits meet a dead server many times over.
      const outage = () => samples.filter((x) => x.startedAt > stoppedAt + 100);
      await until('30 requests met the outage', () => outage().length >= 30, { withinMs: 60_000 });
      const during = outage();
      assert.ok(during.length >= 10, `traffic kept coming during the outage (${during.length})`);
      for (const x of during) {
        assert.equal(x.status, 503, JSON.stringify(x));
        assert.equal(x.retryAfter, '1');
        assert.match(x.contentType ?? '', /^application\/problem\+json/);
        assert.ok(x.ms <= 2_000 + LOAD_MARGIN_MS, `a request waited ${x.ms} ms during the outage`);
      }

      await pg.start();
      const restartedAt = Date.now();
      for (const key of keys)
        await waitFor('every key works again', 5_000 + LOAD_MARGIN_MS - (Date.now() - restartedAt), async () => {
          return (await timed(`${s.url}/v1/customers?limit=1`, key)).status === 200;
        });
      await waitFor('ready again', 5_000 + LOAD_MARGIN_MS - (Date.now() - restartedAt), async () => {
        return (await timed(`${s.url}/health/ready`)).status === 200;
      });
    } finally {
      running = false;
      await traffic;
    }
  });

  it('a locked table: requests end in a statement timeout (503) instead of waiting, and the pool stays usable', async () => {
    const admin = postgres(pg.url.replace(/\/postgres$/, `/${await databaseName(s)}`), { max: 1, onnotice: () => {} });
    let unlock: () => void = () => {};
    const locked = new Promise<void>((resolve) => {
      unlock = resolve;
    });
    let lockTaken: () => void = () => {};
    const taken = new Promise<void>((resolve) => {
      lockTaken = resolve;
    });
    const holder = admin.begin(async (trx) => {
      await trx`LOCK TABLE customers IN ACCESS EXCLUSIVE MODE`;
      lockTaken();
      await locked;
    });
    try {
      await taken;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => timed(`${s.url}/v1/customers?limit=1`, keys[i % keys.length])),
      );
      for (const x of results) {
        assert.equal(x.status, 503, JSON.stringify(x));
        assert.ok(x.ms <= 2_000 + LOAD_MARGIN_MS * 2, `a request waited ${x.ms} ms on the lock`);
      }
      const ready = await timed(`${s.url}/health/ready`);
      assert.equal(ready.status, 200, 'other tables are served: the instance is still ready');
      assert.equal((await timed(`${s.url}/v1/me`, keys[0])).status, 200);
    } finally {
      unlock();
      await holder;
      await admin.end();
    }
    assert.equal((await timed(`${s.url}/v1/customers?limit=1`, keys[0])).status, 200);
  });
});

/** The code of a statement's failure (SQLSTATE or the driver's), or its text. */
const codeOf = (err: unknown): string => (err as { code?: string }).code ?? String(err);

/** Failures that escape every caller (an uncaught exception, an unhandled rejection), noted until `stop()`. */
function watchEscapes(): { seen: unknown[]; stop: () => void } {
  const seen: unknown[] = [];
  const note = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', note);
  process.on('uncaughtException', note);
  return {
    seen,
    stop: () => {
      process.off('unhandledRejection', note);
      process.off('uncaughtException', note);
    },
  };
}

describe('balcao serve started before its database', () => {
  it('waits for PostgreSQL to come up (bounded: src/cli/database-wait.ts), then migrates and serves', async () => {
    const pg = await startOwnPostgres();
    try {
      await pg.stop();
      let saidWaiting: () => void = () => {};
      const waiting = new Promise<void>((resolve) => {
        saidWaiting = resolve;
      });
      const serving = spawnServe(
        { DATABASE_URL: pg.url },
        { onLog: (stderr) => /the database does not answer yet \(/.test(stderr) && saidWaiting() },
      );
      serving.catch(() => {}); // awaited below, once the database is up
      // Down (refused at once) until serve says it waits: it must neither give up nor start serving. On its word, not
      // after a fixed pause: on a loaded machine the process may take longer than any pause to make its first attempt.
      await Promise.race([waiting, serving.then(() => assert.fail('serve listened while its database was down'))]);
      await pg.start();
      const server = await serving;
      try {
        assert.match(server.logs(), /the database does not answer yet \(/, server.logs());
        // Listening comes first; ready once the change capture has its slot.
        await until('ready', async () => (await fetch(`${server.url}/health/ready`)).status === 200, { withinMs: 20_000 });
        const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
        try {
          const [row] = await sql<{ applied: number }[]>`SELECT count(*)::int AS applied FROM schema_migrations`;
          assert.ok((row?.applied ?? 0) > 0, 'serve migrated the database once it answered');
        } finally {
          await sql.end();
        }
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    } finally {
      await pg.destroy();
    }
  });
});

describe('connections lost under the driver (patches/)', () => {
  let pg: OwnPostgres;
  before(async () => {
    pg = await startOwnPostgres();
  });
  after(async () => {
    await pg?.destroy();
  });

  // postgres.js's own first query on a new connection (it reads the array types) dropped its failure as
  // an unhandled rejection, which ends a Node process (porsager/postgres#1192): patches/ hands it to the
  // connection's own error handling (docs/decisions.md, "The PostgreSQL driver").
  it('a connection lost right after its start-up costs at most the statements it carried, never the process, and the pool goes on', async () => {
    const escaped = watchEscapes();
    const proxy = await TcpProxy.start('127.0.0.1', pg.port);
    const viaProxy = new URL(pg.url);
    viaProxy.port = String(proxy.port);
    // Armed before the pool opens any connection: its first three are ended at their first statement.
    proxy.terminateAtFirstQuery(3);
    const database = await openDatabase({ databaseUrl: viaProxy.href, dataDir: '', dbPoolSize: 4 });
    const { sql } = await import('kysely');
    const statement = async (i: number) => {
      try {
        // Half lone statements, half transactions (a transaction reserves its connection first).
        if (i % 2 === 0) await sql`SELECT 1`.execute(database.db);
        else await database.db.transaction().execute((trx) => sql`SELECT 1`.execute(trx));
        return 'ok';
      } catch (err) {
        return codeOf(err);
      }
    };
    try {
      const outcomes: string[] = [];
      await until(
        'three connections were ended and then a whole round of statements is answered',
        async () => {
          const round = await Promise.all(Array.from({ length: 8 }, (_, i) => statement(i)));
          outcomes.push(...round);
          return { terminated: proxy.terminated, round };
        },
        { done: (x) => x.terminated === 3 && x.round.every((outcome) => outcome === 'ok') },
      );
      // A statement on an ended connection fails with the server's word for it or the driver's; none waits for ever.
      for (const outcome of outcomes) assert.ok(['ok', '57P01', 'CONNECTION_CLOSED'].includes(outcome), outcome);
      assert.ok(
        outcomes.some((outcome) => outcome !== 'ok'),
        'a statement met an ended connection',
      );
      assert.deepEqual(escaped.seen, []);
    } finally {
      escaped.stop();
      await database.close();
      await proxy.stop();
    }
  });

  // A transaction holds its connection (postgres.js `reserve()`). When that connection closed between two
  // statements, postgres.js 3.4.9 wrote the next one to a socket that was gone: a TypeError thrown from a timer,
  // which ends a Node process, or a statement queued for ever; releasing the dead connection then put it
  // back among the open ones, and the server's last error answer failed the next session's first statement.
  // patches/ makes each of them fail with CONNECTION_CLOSED (or the server's 57P01) and leaves the connection
  // to the pool, which reconnects it (docs/decisions.md, "The PostgreSQL driver").
  it('a connection lost between the statements of a transaction fails the statements that follow, small or large, never the process, and the pool goes on', async () => {
    const escaped = watchEscapes();
    // One connection: a dead one handed out again would fail every statement after it.
    const database = await openDatabase({ databaseUrl: pg.url, dataDir: '', dbPoolSize: 1 });
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
    const { sql } = await import('kysely');
    try {
      for (const filler of ['small', 'x'.repeat(4096)]) {
        const outcomes: string[] = [];
        const ended = await database.db
          .transaction()
          .execute(async (trx) => {
            const { pid } = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0]!;
            await admin`SELECT pg_terminate_backend(${pid})`;
            await until(
              'the terminated backend is gone',
              async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}`).length === 0,
            );
            // The server's FATAL and its close reach the driver after the backend is gone; both are then handled.
            await until('the transaction can no longer run a statement', async () => {
              const outcome = await sql`SELECT ${filler} AS filler`.execute(trx).then(() => 'answered', codeOf);
              outcomes.push(outcome);
              return outcome !== 'answered';
            });
            // Every later statement of the transaction fails too, at once: none waits for a connection that is gone.
            outcomes.push(await sql`SELECT 2`.execute(trx).then(() => 'answered', codeOf));
          })
          .then(() => 'committed', codeOf);
        const failures = outcomes.filter((outcome) => outcome !== 'answered');
        assert.ok(failures.length >= 2, `the statements after the loss failed: ${outcomes.join(', ')}`);
        for (const failure of failures) assert.ok(['57P01', 'CONNECTION_CLOSED', 'ECONNRESET', 'EPIPE'].includes(failure), failure);
        assert.notEqual(ended, 'committed');
        // The pool's one connection was released dead: the next statement reconnects it.
        assert.equal((await sql<{ n: number }>`SELECT 3 AS n`.execute(database.db)).rows[0]?.n, 3);
      }
      assert.deepEqual(escaped.seen, []);
    } finally {
      escaped.stop();
      await admin.end();
      await database.close();
    }
  });
});

async function databaseName(s: TestServer): Promise<string> {
  const { sql } = await import('kysely');
  return (await sql<{ name: string }>`SELECT current_database() AS name`.execute(s.db)).rows[0]?.name ?? 'postgres';
}
