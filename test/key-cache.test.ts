// The key cache (accounts/key-cache.ts) against the real database: known keys are kept least
// recently used first, and unknown hashes have a cache of their own, so a flood of them cannot
// push a real key out. A key changed in the database while cached shows what was served from where.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import postgres from 'postgres';
import { KeyCache } from '../src/accounts/key-cache.ts';
import { hashApiKey } from '../src/domain/api-keys.ts';
import { type Database, openDatabase } from '../src/infra/db/engine/database.ts';
import { databaseUrl } from './helpers/db-templates.ts';
import { openTestDatabase, type TestServer, startTestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { item, writer } from './helpers/write-fixtures.ts';

describe('key cache', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  /** Three keys, and a way to make them unknown to the database (so only the cache still knows them). */
  async function keys() {
    const { account, key: a } = await s.createAccountWithKey();
    const { key: b } = await s.createKey(account.id);
    const { key: c } = await s.createKey(account.id);
    const forget = async () => {
      await s.db.deleteFrom('api_keys').where('account_id', '=', account.id).execute();
    };
    return { hashes: [a, b, c].map(hashApiKey) as [string, string, string], forget };
  }

  test('a flood of unknown hashes does not evict a known key', async () => {
    const { hashes, forget } = await keys();
    const cache = new KeyCache(s.db, { maxEntries: 2, maxUnknownEntries: 2, now: () => 0 });
    assert.ok(await cache.lookup(hashes[0]));
    for (let i = 0; i < 10; i++) assert.equal(await cache.lookup(randomBytes(32).toString('hex')), null);
    await forget();
    assert.ok(await cache.lookup(hashes[0]), 'still served from the cache');
  });

  test('keys past their freshness are refreshed in the background together, in one query, and a revocation is then seen', async () => {
    const { account, key: first } = await s.createAccountWithKey();
    const others = await Promise.all([1, 2, 3, 4].map(() => s.createKey(account.id)));
    const hashes = [first, ...others.map((o) => o.key)].map(hashApiKey);
    let queries = 0;
    // The cache's own queries, counted on their way to the real database.
    const counted = s.db.withPlugin({
      transformQuery: (args) => {
        queries++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    let clock = 0;
    const cache = new KeyCache(counted, { now: () => clock, refreshBatchMs: 20 });
    for (const hash of hashes) assert.equal((await cache.lookup(hash))?.context.revoked, false);
    assert.equal(queries, 5, 'a first lookup waits for its own query');
    await s.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('account_id', '=', account.id).execute();
    clock = 3_000; // past FRESH_MS (2 s), within MAX_AGE_MS (4.5 s): served as cached while refreshed
    for (const hash of hashes) assert.equal((await cache.lookup(hash))?.context.revoked, false, 'served as cached meanwhile');
    await until('every key refreshed', async () => {
      const entries = await Promise.all(hashes.map((hash) => cache.lookup(hash)));
      return entries.every((entry) => entry?.context.revoked === true);
    });
    assert.equal(queries, 6, 'the five refreshes were one query');
  });

  test('the least recently used known key goes first', async () => {
    const { hashes, forget } = await keys();
    const [a, b, c] = hashes;
    const cache = new KeyCache(s.db, { maxEntries: 2, now: () => 0 });
    await cache.lookup(a);
    await cache.lookup(b);
    await cache.lookup(a); // a is now the most recently used
    await cache.lookup(c); // evicts b, not a (the older insertion)
    await forget();
    assert.ok(await cache.lookup(a), 'a kept');
    assert.equal(await cache.lookup(b), null, 'b was evicted: looked up again, and gone');
  });
});

// PostgreSQL only: the embedded engine is one connection, and every query waits its turn there.
if (process.env.TEST_DATABASE_URL) {
  const adminUrl = process.env.TEST_DATABASE_URL;
  describe('key lookups beside a full pool', () => {
    let s: TestServer;
    let made: Awaited<ReturnType<typeof openTestDatabase>>;
    let pooled: Database;
    let name: string;
    before(async () => {
      made = await openTestDatabase();
      name = String((await sql<{ name: string }>`SELECT current_database() AS name`.execute(made.db)).rows[0]?.name);
      // The same database through a pool of two connections.
      pooled = await openDatabase({ databaseUrl: databaseUrl(adminUrl, name), dataDir: '', dbPoolSize: 2 });
      s = await startTestServer({ database: pooled });
    });
    after(async () => {
      await s.close();
      await pooled.close();
      await made.close();
      await made.drop();
    });

    test("a key's first lookup does not wait behind the transactions that fill the pool", async () => {
      // Two accounts: one account's sales follow each other on one connection (its write lane), so it takes two
      // to hold both of the pool's connections.
      const writers = [await writer(s), await writer(s)];
      const unseen = await s.createKey(writers[0]!.accountId, { name: 'never looked up yet' });
      for (const { key } of writers) {
        const first = await s.request('POST', '/v1/sales', { key, body: { items: [item()] } });
        assert.equal(first.status, 201, first.text);
      }
      // The accounts' sale counters locked from outside the app: each account's sale then holds one of the pool's
      // two connections while it waits for the lock, and no connection is left for anything else.
      const outside = postgres(databaseUrl(adminUrl, name), { max: 2, onnotice: () => {} });
      const held = outside.reserve();
      const connection = await held;
      try {
        await connection`BEGIN`;
        for (const { accountId } of writers) await connection`SELECT value FROM tenant_counters WHERE team_id = ${accountId} FOR UPDATE`;
        const sales = writers.map(({ key }) => s.request('POST', '/v1/sales', { key, body: { items: [item()] } }));
        await until('both pooled connections wait on the counter', async () => {
          const [row] = await outside`
            SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = ${name} AND wait_event_type = 'Lock'`;
          return (row?.waiting as number) >= 2;
        });
        // A key the cache has never seen: its lookup goes to the database now, with the pool full.
        const me = await s.request('GET', '/v1/me', { key: unseen.key });
        assert.equal(me.status, 200, me.text);
        await connection`COMMIT`;
        for (const sale of await Promise.all(sales)) assert.equal(sale.status, 201, sale.text);
      } finally {
        connection.release();
        await outside.end();
      }
    });
  });
}
