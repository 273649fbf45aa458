// Idempotency-Key over HTTP (SPEC part 8, DECISIONS B.12): replays, conflicts, keys in flight,
// races, per-key independence, expiry and purge, failures that free the key, other methods.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { after, before, describe, it } from 'node:test';
import { requestSignature } from '../src/http/idempotency.ts';
import { IdempotencyStore } from '../src/infra/idempotency-store.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { captured } from './helpers/captured.ts';
import { StatementRecorder } from './helpers/statement-recorder.ts';
import { item, writer } from './helpers/write-fixtures.ts';

const IK = 'idempotency-key';

describe('Idempotency-Key', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  const post = (key: string, path: string, body: unknown, idem?: string) =>
    s.request('POST', path, { key, body, headers: idem === undefined ? {} : { [IK]: idem } });
  const countRows = async (table: 'transactions' | 'transaction_items', accountId: string) =>
    Number(
      (
        await s.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('team_id', '=', accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const countSales = (accountId: string) => countRows('transactions', accountId);

  it('replays the first response with the same status and body and Idempotent-Replay: true', async () => {
    const { key, accountId } = await writer(s);
    const body = { items: [item({ quantity: 3, unit_price: 19.99 })] };
    const first = await post(key, '/v1/sales', body, 'sale-1');
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replay'), null);
    // Same body with its keys in another order: the same request.
    const reordered = { items: [Object.fromEntries(Object.entries(body.items[0] as object).reverse())] };
    const second = await post(key, '/v1/sales', reordered, 'sale-1');
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replay'), 'true');
    assert.match(second.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(second.text, first.text);
    // The replay is the original response: its X-Request-Id is the original's, as its body says.
    assert.equal(second.headers.get('x-request-id'), first.headers.get('x-request-id'));
    assert.equal(second.body.meta.request_id, second.headers.get('x-request-id'));
    assert.equal(await countSales(accountId), 1);
  });

  it('keeps a large stored response compressed (lz4 on PostgreSQL, pglz on the embedded engine) and replays it byte for byte', async () => {
    const { key, keyId } = await writer(s);
    // 30 items: about 10 kB of response, well past the 2 kB from which PostgreSQL compresses a row's text.
    const body = { items: Array.from({ length: 30 }, (_, i) => item({ quantity: i + 1, unit_price: 10.5, notes: `item ${i}` })) };
    const first = await post(key, '/v1/sales', body, 'big-sale');
    assert.equal(first.status, 201);
    assert.ok(first.text.length > 8_000, `a response of ${first.text.length} characters`);
    const stored = await sql<{ method: string | null; size: number; length: number }>`
      SELECT pg_column_compression(response_body) AS method, pg_column_size(response_body) AS size, length(response_body) AS length
      FROM idempotency_keys WHERE api_key_id = ${keyId} AND idempotency_key = 'big-sale'`.execute(s.db);
    const [row] = stored.rows;
    assert.equal(row?.method, s.database.engine === 'postgres' ? 'lz4' : 'pglz');
    assert.equal(row?.length, first.text.length);
    assert.ok(row.size < row.length / 2, `stored in ${row.size} bytes for ${row.length} characters`);
    const replay = await post(key, '/v1/sales', body, 'big-sale');
    assert.equal(replay.headers.get('idempotent-replay'), 'true');
    assert.equal(replay.text, first.text);
  });

  it('answers 409 idempotency_conflict for another body or another path, and runs neither', async () => {
    const { key, accountId } = await writer(s);
    const body = { full_name: 'Ana', name: 'Ana', phone: '1' };
    assert.equal((await post(key, '/v1/customers', body, 'k')).status, 201);
    const otherBody = await post(key, '/v1/customers', { ...body, full_name: 'Bia' }, 'k');
    assert.equal(otherBody.status, 409);
    assert.match(otherBody.body.type, /\/idempotency_conflict$/);
    assert.match(otherBody.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const otherPath = await post(key, '/v1/suppliers', body, 'k');
    assert.equal(otherPath.status, 409);
    assert.match(otherPath.body.type, /\/idempotency_conflict$/);
    assert.equal((await s.request('GET', '/v1/customers', { key })).body.data.length, 1);
    assert.equal((await s.request('GET', '/v1/suppliers', { key })).body.data.length, 0);
    // The conflict did not consume or change the key: the original still replays.
    const replay = await post(key, '/v1/customers', body, 'k');
    assert.equal(replay.headers.get('idempotent-replay'), 'true', replay.text);
    assert.equal(await countSales(accountId), 0);
  });

  it('keeps keys independent per API key', async () => {
    const a = await writer(s);
    const secondKey = await s.createKey(a.accountId);
    const b = await writer(s);
    const body = { items: [item()] };
    const r1 = await post(a.key, '/v1/sales', body, 'shared');
    const r2 = await post(secondKey.key, '/v1/sales', body, 'shared');
    const r3 = await post(b.key, '/v1/sales', { items: [item()] }, 'shared');
    for (const r of [r1, r2, r3]) {
      assert.equal(r.status, 201);
      assert.equal(r.headers.get('idempotent-replay'), null);
    }
    assert.notEqual(r1.body.data.id, r2.body.data.id);
    assert.equal(await countSales(a.accountId), 2);
  });

  it('creates exactly one sale from 50 concurrent POSTs with the same key', async () => {
    const { key, accountId } = await writer(s);
    const body = { items: [item({ quantity: 2, unit_price: 0.1 })], notes: 'race' };
    const results = await Promise.all(Array.from({ length: 50 }, () => post(key, '/v1/sales', body, 'race-key')));
    const fresh = results.filter((r) => r.status === 201 && r.headers.get('idempotent-replay') === null);
    const replays = results.filter((r) => r.status === 201 && r.headers.get('idempotent-replay') === 'true');
    const inFlight = results.filter((r) => r.status === 409);
    assert.equal(fresh.length, 1);
    assert.equal(replays.length + inFlight.length, 49);
    for (const r of replays) assert.equal(r.text, (fresh[0] as (typeof results)[number]).text);
    for (const r of inFlight) {
      assert.match(r.body.type, /\/idempotency_conflict$/);
      assert.equal(r.headers.get('retry-after'), '1');
      assert.match(r.body.detail, /in progress/);
    }
    assert.equal(await countSales(accountId), 1);
    const items = await s.db.selectFrom('transaction_items').select('id').where('team_id', '=', accountId).execute();
    assert.equal(items.length, 1);
  });

  it("claims the key in the creation's own transaction: one commit per write", async () => {
    const { key } = await writer(s);
    const body = { items: [item()] };
    // Each insert notes the transaction it ran in: the claim's and the sale's must be one.
    await sql`CREATE TABLE test_write_txids (what text NOT NULL, txid bigint NOT NULL)`.execute(s.db);
    await sql`
      CREATE FUNCTION test_note_txid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO test_write_txids VALUES (TG_TABLE_NAME, txid_current());
        RETURN NULL;
      END $$`.execute(s.db);
    for (const table of ['idempotency_keys', 'transactions'])
      await sql`CREATE TRIGGER test_note_txid AFTER INSERT ON ${sql.table(table)} FOR EACH ROW EXECUTE FUNCTION test_note_txid()`.execute(
        s.db,
      );
    try {
      const res = await post(key, '/v1/sales', body, 'one-commit');
      assert.equal(res.status, 201);
      const noted = await sql<{ what: string; txid: string }>`SELECT what, txid::text AS txid FROM test_write_txids ORDER BY what`.execute(
        s.db,
      );
      assert.deepEqual(
        noted.rows.map((r) => r.what),
        ['idempotency_keys', 'transactions'],
      );
      assert.equal(noted.rows[0]?.txid, noted.rows[1]?.txid);
    } finally {
      for (const table of ['idempotency_keys', 'transactions']) await sql`DROP TRIGGER test_note_txid ON ${sql.table(table)}`.execute(s.db);
      await sql`DROP FUNCTION test_note_txid()`.execute(s.db);
      await sql`DROP TABLE test_write_txids`.execute(s.db);
    }
    const replay = await post(key, '/v1/sales', body, 'one-commit');
    assert.equal(replay.headers.get('idempotent-replay'), 'true');
  });

  it('answers 409 with Retry-After: 1 while the first request with the key is still running', async () => {
    const { key, keyId } = await writer(s);
    const body = { full_name: 'Ana', phone: '1' };
    // A claim held by a request that is running right now (claimed a moment ago).
    await s.db
      .insertInto('idempotency_keys')
      .values({
        api_key_id: keyId,
        idempotency_key: 'busy',
        signature: requestSignature('POST', '/v1/customers', body),
        state: 'in_progress',
        claim_token: randomUUID(),
        expires_at: sql`now() + interval '1 day'`,
      })
      .execute();
    const res = await post(key, '/v1/customers', body, 'busy');
    assert.equal(res.status, 409);
    assert.match(res.body.type, /\/idempotency_conflict$/);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.match(res.body.detail, /in progress/);
    assert.equal((await s.request('GET', '/v1/customers', { key })).body.data.length, 0);
  });

  it('takes over a stale claim whose request never committed, but never re-runs a committed one', async () => {
    const { key, keyId } = await writer(s);
    const body = { full_name: 'Ana', phone: '1' };
    const claim = (idem: string, committed: boolean) =>
      s.db
        .insertInto('idempotency_keys')
        .values({
          api_key_id: keyId,
          idempotency_key: idem,
          signature: requestSignature('POST', '/v1/customers', body),
          state: 'in_progress',
          claim_token: randomUUID(),
          committed,
          created_at: sql`now() - interval '10 minutes'`,
          expires_at: sql`now() + interval '1 day'`,
        })
        .execute();
    await claim('dead-before-commit', false);
    await claim('dead-after-commit', true);
    const retried = await post(key, '/v1/customers', body, 'dead-before-commit');
    assert.equal(retried.status, 201);
    const blocked = await post(key, '/v1/customers', body, 'dead-after-commit');
    assert.equal(blocked.status, 409);
    assert.equal(blocked.headers.get('retry-after'), '1');
    assert.equal((await s.request('GET', '/v1/customers', { key })).body.data.length, 1);
  });

  it("never commits a write whose key another request recorded while it ran: it answers that request's replay", async () => {
    const { key, accountId } = await writer(s);
    // Two identical requests race: the first stalls for a second on its customer's insert (it holds the advisory
    // lock), its key already claimed by the same statement; the second's claim waits for the first's. Once the first
    // commits, the second finds the key recorded: whatever it wrote rolls back, and it answers the first one's
    // response. (PGlite runs one statement at a time: the stall holds the whole database, with the same outcome.)
    await sql
      .raw(`
      CREATE FUNCTION test_stall_first_writer() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.team_id = '${accountId}' AND pg_try_advisory_xact_lock(424242) THEN PERFORM pg_sleep(1); END IF;
        RETURN NULL;
      END $$`)
      .execute(s.db);
    await sql`
      CREATE TRIGGER test_stall_first_writer AFTER INSERT ON customers
      FOR EACH ROW EXECUTE FUNCTION test_stall_first_writer()`.execute(s.db);
    const body = { full_name: 'Ana', name: 'Ana', phone: '1' };
    let answers: Awaited<ReturnType<typeof post>>[];
    try {
      const stalled = post(key, '/v1/customers', body, 'recorded-mid-write');
      await new Promise((resolve) => setTimeout(resolve, 200));
      answers = [await post(key, '/v1/customers', body, 'recorded-mid-write'), await stalled];
    } finally {
      await sql`DROP TRIGGER test_stall_first_writer ON customers`.execute(s.db);
      await sql`DROP FUNCTION test_stall_first_writer()`.execute(s.db);
    }
    assert.deepEqual(
      answers.map((a) => a.status),
      [201, 201],
    );
    assert.deepEqual(
      answers.map((a) => a.headers.get('idempotent-replay')),
      ['true', null],
    );
    assert.equal(answers[0]!.text, answers[1]!.text);
    const listed = await s.request('GET', '/v1/customers', { key });
    assert.deepEqual(
      listed.body.data.map((c: { id: string }) => c.id),
      [answers[0]!.body.data.id],
    );
    await captured(s.database);
    const events = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE team_id = ${accountId}`.execute(s.db);
    assert.equal(Number(events.rows[0]!.n), 1);
  });

  it('stores 422 validation answers and replays them', async () => {
    const { key } = await writer(s);
    const first = await post(key, '/v1/sales', { items: [] }, 'bad-body');
    assert.equal(first.status, 422);
    const second = await post(key, '/v1/sales', { items: [] }, 'bad-body');
    assert.equal(second.status, 422);
    assert.equal(second.headers.get('idempotent-replay'), 'true');
    assert.match(second.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(second.text, first.text);
  });

  it('does not store a 5xx: the key stays free for a retry', async () => {
    const { key } = await writer(s);
    // A database refusal the API does not expect: the insert fails with a 500.
    await sql`ALTER TABLE customers ADD CONSTRAINT test_refuse_boom CHECK (full_name <> 'boom-5xx')`.execute(s.db);
    try {
      const failed = await post(key, '/v1/customers', { full_name: 'boom-5xx', phone: '1' }, 'retry-me');
      assert.equal(failed.status, 500);
      assert.doesNotMatch(failed.text, /constraint|test_refuse_boom|check/i);
    } finally {
      await sql`ALTER TABLE customers DROP CONSTRAINT test_refuse_boom`.execute(s.db);
    }
    const retried = await post(key, '/v1/customers', { full_name: 'boom-5xx', phone: '1' }, 'retry-me');
    assert.equal(retried.status, 201);
    assert.equal(retried.headers.get('idempotent-replay'), null);
  });

  it('a sale whose insert or items the database refuses: 500 without internals, nothing written, the key free', async () => {
    const { key, accountId } = await writer(s);
    const countItems = () => countRows('transaction_items', accountId);
    // The sale's insert and its items' insert leave together, before either has answered: a refusal of
    // either must still be the answer, and must leave neither behind.
    await sql`ALTER TABLE transactions ADD CONSTRAINT test_refuse_sale CHECK (order_code IS DISTINCT FROM 'boom-sale')`.execute(s.db);
    await sql`ALTER TABLE transaction_items ADD CONSTRAINT test_refuse_item CHECK (notes IS DISTINCT FROM 'boom-item')`.execute(s.db);
    try {
      const refusedSale = await post(key, '/v1/sales', { order_code: 'boom-sale', items: [item()] }, 'sale-refused');
      assert.equal(refusedSale.status, 500);
      assert.match(refusedSale.body.type, /\/internal_error$/);
      const refusedItem = await post(key, '/v1/sales', { items: [item(), item({ notes: 'boom-item' })] }, 'item-refused');
      assert.equal(refusedItem.status, 500);
      for (const res of [refusedSale, refusedItem]) assert.doesNotMatch(res.text, /constraint|test_refuse|check|aborted/i);
    } finally {
      await sql`ALTER TABLE transactions DROP CONSTRAINT test_refuse_sale`.execute(s.db);
      await sql`ALTER TABLE transaction_items DROP CONSTRAINT test_refuse_item`.execute(s.db);
    }
    assert.equal(await countSales(accountId), 0);
    assert.equal(await countItems(), 0);
    const retried = await post(key, '/v1/sales', { order_code: 'boom-sale', items: [item()] }, 'sale-refused');
    assert.equal(retried.status, 201);
    assert.equal(retried.headers.get('idempotent-replay'), null);
    assert.equal(retried.body.data.transaction_number, '1');
    assert.equal(retried.body.data.items.length, 1);
    assert.equal(await countItems(), 1);
  });

  it('treats a record older than 24 hours as absent', async () => {
    const { key, keyId } = await writer(s);
    const body = { full_name: 'Ana', phone: '1' };
    const first = await post(key, '/v1/customers', body, 'old');
    await s.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql`now() - interval '25 hours'`, expires_at: sql`now() - interval '1 hour'` })
      .where('api_key_id', '=', keyId)
      .execute();
    const again = await post(key, '/v1/customers', body, 'old');
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replay'), null);
    assert.notEqual(again.body.data.id, first.body.data.id);
    // Another body with the expired key is a new request too, not a conflict.
    await s.db
      .updateTable('idempotency_keys')
      .set({ expires_at: sql`now() - interval '1 second'` })
      .where('api_key_id', '=', keyId)
      .execute();
    assert.equal((await post(key, '/v1/customers', { ...body, full_name: 'Bia' }, 'old')).status, 201);
  });

  it('purges expired records', async () => {
    const { keyId } = await writer(s);
    const store = new IdempotencyStore(s.db);
    const row = (idem: string, expires: string) => ({
      api_key_id: keyId,
      idempotency_key: idem,
      signature: 'x',
      state: 'done' as const,
      response_status: 201,
      response_body: '{}',
      expires_at: sql<string>`now() + cast(${expires} as interval)`,
    });
    await s.db
      .insertInto('idempotency_keys')
      .values([row('gone', '-1 minute'), row('kept', '1 hour')])
      .execute();
    assert.ok((await store.purgeExpired()) >= 1);
    const left = await s.db.selectFrom('idempotency_keys').select('idempotency_key').where('api_key_id', '=', keyId).execute();
    assert.deepEqual(
      left.map((r) => r.idempotency_key),
      ['kept'],
    );
  });

  it('refuses a key over 255 characters or empty with 422 validation naming the header', async () => {
    const { key } = await writer(s);
    const body = { full_name: 'Ana', phone: '1' };
    for (const idem of ['x'.repeat(256), '']) {
      const res = await post(key, '/v1/customers', body, idem);
      assert.equal(res.status, 422);
      assert.match(res.body.type, /\/validation$/);
      assert.match(res.body.detail, /Idempotency-Key/);
    }
    assert.equal((await s.request('GET', '/v1/customers', { key })).body.data.length, 0);
    assert.equal((await post(key, '/v1/customers', body, 'y'.repeat(255))).status, 201);
  });

  it('ignores the header on GET, PATCH and DELETE', async () => {
    const { key } = await writer(s);
    const { id } = (await post(key, '/v1/customers', { full_name: 'Ana', phone: '1' })).body.data;
    const headers = { [IK]: 'same-for-all' };
    const p1 = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { notes: 'one' }, headers });
    const p2 = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { notes: 'two' }, headers });
    assert.deepEqual([p1.status, p2.status], [200, 200]);
    assert.equal(p2.body.data.notes, 'two');
    assert.equal(p2.headers.get('idempotent-replay'), null);
    const long = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { notes: 'three' }, headers: { [IK]: 'z'.repeat(300) } });
    assert.equal(long.status, 200);
    const get = await s.request('GET', `/v1/customers/${id}`, { key, headers });
    assert.deepEqual([get.status, get.body.data.notes, get.headers.get('idempotent-replay')], [200, 'three', null]);
    assert.equal((await s.request('DELETE', `/v1/customers/${id}`, { key, headers })).status, 204);
    // None of these used the key: a POST with it is a first request.
    const created = await post(key, '/v1/customers', { full_name: 'Bia', phone: '2' }, 'same-for-all');
    assert.deepEqual([created.status, created.headers.get('idempotent-replay')], [201, null]);
  });
});

describe('Idempotency-Key records under any plan', () => {
  const recorder = new StatementRecorder();
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ plugin: recorder });
  });
  after(() => s.close());

  it('stores a response through the key’s unique index, even in a plan made while the table looked empty', async () => {
    // A connection keeps the plan it made of a prepared statement: one made just after a VACUUM of an emptied
    // table saw a table of no rows, for which scanning the whole table is the cheapest plan.
    await sql`DELETE FROM idempotency_keys`.execute(s.db);
    await sql`VACUUM ANALYZE idempotency_keys`.execute(s.db);
    const { key } = await writer(s);
    recorder.on = true;
    try {
      const created = await s.request('POST', '/v1/sales', { key, body: { items: [item()] }, headers: { [IK]: 'plan-created' } });
      assert.equal(created.status, 201);
      const refused = await s.request('POST', '/v1/sales', { key, body: { items: [] }, headers: { [IK]: 'plan-refused' } });
      assert.equal(refused.status, 422);
    } finally {
      recorder.on = false;
    }
    const storing = recorder.statements().filter((q) => /INSERT INTO idempotency_keys[\s\S]*response_body/.test(q.sql));
    // The creation's (stored with its write) and the 422's (stored after it).
    assert.equal(storing.length, 2);
    for (const [i, statement] of storing.entries()) {
      const plan = await s.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL plan_cache_mode = force_generic_plan`.execute(trx);
        await sql.raw(`PREPARE storing_${i} AS ${statement.sql}`).execute(trx);
        const nulls = statement.parameters.map(() => 'NULL').join(', ');
        const explained = await sql.raw<Record<string, string>>(`EXPLAIN EXECUTE storing_${i}(${nulls})`).execute(trx);
        await sql.raw(`DEALLOCATE storing_${i}`).execute(trx);
        return explained.rows.map((row) => Object.values(row).join(' ')).join('\n');
      });
      // The creation's key is a plain INSERT (its unique index refuses a duplicate): no read of the table at all.
      // The 422's goes through the key's unique index, the ON CONFLICT arbiter.
      if (i === 0) assert.doesNotMatch(plan, /Scan[^\n]* on idempotency_keys/);
      else assert.match(plan, /Conflict Arbiter Indexes: idempotency_keys_pkey/);
      assert.match(plan, /Insert on idempotency_keys/);
      assert.doesNotMatch(plan, /Seq Scan/);
    }
  });
});
