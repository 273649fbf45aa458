// POST /v1/batch (issue 28): each operation answered as the single request, atomic and not, with scope and
// validation failures among them; what the database holds after; idempotent replay; events and the write
// log per operation; the rate-limit accounting (each operation a write, the batch one burst) and the 422s.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { captured } from './helpers/captured.ts';
import { item, UNLIMITED, writer } from './helpers/write-fixtures.ts';

type Result = { status: number; body: any; etag: string | null };

describe('POST /v1/batch', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  const customersOf = async (accountId: string, server: TestServer = s) =>
    (
      await sql<{ full_name: string }>`SELECT full_name FROM customers WHERE team_id = ${accountId} ORDER BY full_name`.execute(server.db)
    ).rows.map((r) => r.full_name);

  it('non-atomic: each operation stands alone and answers as the single request would', async () => {
    const { account, key } = await s.createAccountWithKey({ rateLimits: UNLIMITED, scopes: ['customers:write'] });
    const existing = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Old', phone: '1' } });
    const existingId = existing.body.data.id;
    const operations = [
      { method: 'POST', path: '/v1/customers', body: { full_name: 'A', phone: '1' } },
      { method: 'POST', path: '/v1/sales', body: { items: [item()] } }, // no sales:write
      { method: 'POST', path: '/v1/customers', body: { full_name: '' } }, // invalid
      { method: 'PATCH', path: `/v1/customers/${existingId}`, body: { notes: 'n' }, if_match: existing.headers.get('etag') },
      { method: 'PATCH', path: `/v1/customers/${existingId}`, body: { notes: 'm' }, if_match: existing.headers.get('etag') }, // stale now
      { method: 'DELETE', path: `/v1/customers/${randomUUID()}` }, // not found
    ];
    const res = await s.request('POST', '/v1/batch', { key, body: { operations, atomic: false }, headers: { 'x-request-id': 'batch-1' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.meta.request_id, 'batch-1');
    const data = res.body.data as Result[];
    assert.deepEqual(
      data.map((r) => r.status),
      [201, 403, 422, 200, 412, 404],
    );
    assert.equal(data[0]?.body.data.full_name, 'A');
    assert.equal(data[0]?.body.meta.request_id, 'batch-1');
    assert.match(data[0]?.etag ?? '', /^"/);
    assert.match(data[1]?.body.type, /\/insufficient_scope$/);
    assert.equal(data[1]?.etag, null);
    assert.equal(data[2]?.body.errors.find((e: { field: string }) => e.field === 'full_name').code, 'too_short');
    assert.equal(data[3]?.body.data.notes, 'n');
    assert.match(data[4]?.body.type, /\/precondition_failed$/);
    assert.match(data[5]?.body.type, /\/not_found$/);
    // The same as the single request: the read gives the operation's tag and content.
    const read = await s.request('GET', `/v1/customers/${existingId}`, { key });
    assert.equal(read.headers.get('etag'), data[3]?.etag);
    assert.deepEqual(read.body.data, data[3]?.body.data);
    assert.deepEqual(await customersOf(account.id), ['A', 'Old']);
    // The write log holds the two committed operations, under the batch's request id.
    const log = await s.request('GET', '/v1/requests?filter[request_id][eq]=batch-1&sort=created_at', { key });
    assert.deepEqual(
      log.body.data.map((e: { method: string; status: number; resource_id: string }) => [e.method, e.status, e.resource_id]),
      [
        ['POST', 201, data[0]?.body.data.id],
        ['PATCH', 200, existingId],
      ],
    );
  });

  it('atomic: all commit together, or none does and the others carry 424 batch_aborted', async () => {
    const { accountId, key } = await writer(s);
    const account = { id: accountId };
    const good = (name: string) => ({ method: 'POST', path: '/v1/customers', body: { full_name: name, phone: '1' } });
    const failed = await s.request('POST', '/v1/batch', {
      key,
      body: {
        atomic: true,
        operations: [
          good('X1'),
          { method: 'POST', path: '/v1/sales', body: { items: [item({ quantity: 0 })] } },
          good('X2'),
          { method: 'DELETE', path: `/v1/customers/${randomUUID()}` },
        ],
      },
    });
    assert.equal(failed.status, 200, failed.text);
    const results = failed.body.data as Result[];
    assert.deepEqual(
      results.map((r) => r.status),
      [424, 422, 424, 404],
    );
    for (const i of [0, 2]) {
      assert.match(results[i]?.body.type, /\/batch_aborted$/);
      assert.equal(results[i]?.body.status, 424);
      assert.equal(results[i]?.etag, null);
    }
    assert.deepEqual(await customersOf(account.id), []);
    await captured(s.database);
    const events = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE team_id = ${account.id}`.execute(s.db);
    assert.equal(events.rows[0]?.n, 0, 'no event of a rolled-back batch');
    assert.deepEqual((await s.request('GET', '/v1/requests', { key })).body.data, []);

    const ok = await s.request('POST', '/v1/batch', {
      key,
      body: { atomic: true, operations: [good('Y1'), good('Y2'), { method: 'POST', path: '/v1/sales', body: { items: [item()] } }] },
    });
    assert.deepEqual(
      (ok.body.data as Result[]).map((r) => r.status),
      [201, 201, 201],
    );
    assert.deepEqual(await customersOf(account.id), ['Y1', 'Y2']);
    // Each write emitted its event as if alone.
    await captured(s.database);
    const types = await sql<{ type: string }>`SELECT type FROM events WHERE team_id = ${account.id} ORDER BY created_at, id`.execute(s.db);
    assert.deepEqual(
      types.rows.map((r) => r.type),
      ['customer.created', 'customer.created', 'sale.created'],
    );
  });

  it('atomic batches with the same If-Match race like single PATCHes: exactly one wins', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'R', phone: '1' } });
    const path = `/v1/customers/${created.body.data.id}`;
    const tag = created.headers.get('etag') as string;
    const send = (name: string) =>
      s.request('POST', '/v1/batch', {
        key,
        body: { atomic: true, operations: [{ method: 'PATCH', path, body: { full_name: name }, if_match: tag }] },
      });
    const [a, b] = await Promise.all([send('one'), send('two')]);
    assert.deepEqual([a.body.data[0].status, b.body.data[0].status].sort(), [200, 412]);
  });

  for (const atomic of [false, true]) {
    it(`100 mixed operations (${atomic ? 'atomic' : 'not atomic'}), forbidden and invalid among them: every item, and the database`, async () => {
      const { account, key } = await s.createAccountWithKey({ rateLimits: UNLIMITED, scopes: ['customers:write', 'suppliers:write'] });
      const seed = await s.request('POST', '/v1/suppliers', { key, body: { name: 'Seed' } });
      const operations = Array.from({ length: 100 }, (_, i) => {
        switch (i % 5) {
          case 0:
            return { method: 'POST', path: '/v1/customers', body: { full_name: `C${i}`, phone: '1' } };
          case 1:
            return {
              method: 'POST',
              path: '/v1/expenses',
              body: { expense_type: 'x', description: 'd', original_amount: 1, final_amount: 1 },
            };
          case 2:
            return { method: 'POST', path: '/v1/suppliers', body: {} };
          case 3:
            return { method: 'PATCH', path: `/v1/suppliers/${seed.body.data.id}`, body: { name: `S${i}` } };
          default:
            return { method: 'POST', path: '/v1/customers', body: { full_name: `D${i}`, phone: '1' } };
        }
      });
      const res = await s.request('POST', '/v1/batch', { key, body: { operations, atomic } });
      assert.equal(res.status, 200, res.text);
      const data = res.body.data as Result[];
      assert.equal(data.length, 100);
      const expected = (i: number) => [atomic ? 424 : 201, 403, 422, atomic ? 424 : 200, atomic ? 424 : 201][i % 5];
      data.forEach((r, i) => {
        assert.equal(r.status, expected(i), `operation ${i}: ${JSON.stringify(r.body)}`);
      });
      const names = await customersOf(account.id);
      const suppliers = (await sql<{ name: string }>`SELECT name FROM suppliers WHERE team_id = ${account.id}`.execute(s.db)).rows;
      if (atomic) {
        assert.deepEqual(names, []);
        assert.deepEqual(
          suppliers.map((x) => x.name),
          ['Seed'],
        );
      } else {
        assert.equal(names.length, 40);
        assert.deepEqual(
          suppliers.map((x) => x.name),
          ['S98'],
        );
        assert.equal(
          (await s.request('GET', '/v1/requests?limit=100', { key })).body.data.length,
          61,
          'the seed and 60 committed operations',
        );
      }
    });
  }

  it('replays an idempotent batch, and refuses the key with another body', async () => {
    const { accountId, key } = await writer(s);
    const account = { id: accountId };
    const body = { operations: [{ method: 'POST', path: '/v1/customers', body: { full_name: 'I', phone: '1' } }] };
    const first = await s.request('POST', '/v1/batch', { key, body, headers: { 'idempotency-key': 'b-1' } });
    assert.equal(first.status, 200);
    const again = await s.request('POST', '/v1/batch', { key, body, headers: { 'idempotency-key': 'b-1' } });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replay'), 'true');
    assert.equal(again.text, first.text);
    assert.deepEqual(await customersOf(account.id), ['I']);
    const other = await s.request('POST', '/v1/batch', {
      key,
      body: { operations: [{ method: 'POST', path: '/v1/customers', body: { full_name: 'J', phone: '1' } }] },
      headers: { 'idempotency-key': 'b-1' },
    });
    assert.equal(other.status, 409);
    assert.match(other.body.type, /\/idempotency_conflict$/);
    const log = await s.request('GET', '/v1/requests?filter[idempotency_key][eq]=b-1', { key });
    assert.equal(log.body.data.length, 1);
  });

  it('refuses a malformed batch with one 422 naming each part', async () => {
    const { accountId, key } = await writer(s);
    const account = { id: accountId };
    const many = Array.from({ length: 101 }, () => ({ method: 'POST', path: '/v1/customers', body: { full_name: 'M', phone: '1' } }));
    const cases: [unknown, string][] = [
      [[1, 2], 'body'],
      [{ operations: many }, 'operations'],
      [{ operations: [] }, 'operations'],
      [{}, 'operations'],
      [
        {
          operations: [
            { method: 'POST', path: '/v1/customers', body: {} },
            { method: 'GET', path: '/v1/customers/x' },
          ],
        },
        'operations[1].method',
      ],
      // PUT is the upsert's, by external id: never on a record's id.
      [{ operations: [{ method: 'PUT', path: '/v1/customers/x' }] }, 'operations[0].path'],
      [
        {
          operations: [
            { method: 'POST', path: '/v1/customers', body: {} },
            { method: 'POST', path: '/v1/customers', body: {} },
            { method: 'POST', path: '/v1/customers', body: {} },
            { method: 'POST', path: '/v1/products' },
          ],
        },
        'operations[3].path',
      ],
      [{ operations: [{ method: 'PATCH', path: '/v1/customers' }] }, 'operations[0].path'],
      [{ operations: [{ method: 'POST', path: '/v1/batch' }] }, 'operations[0].path'],
      [{ operations: [{ method: 'POST', path: '/v1/customers' }], atomic: 'yes' }, 'atomic'],
    ];
    for (const [body, field] of cases) {
      const res = await s.request('POST', '/v1/batch', { key, body });
      assert.equal(res.status, 422, `${field}: ${res.text}`);
      assert.match(res.body.type, /\/validation$/);
      assert.ok(
        (res.body.errors as { field: string; message: string }[]).some((e) => e.field === field && e.message.length > 0),
        `${field} in ${JSON.stringify(res.body.errors)}`,
      );
    }
    assert.deepEqual(await customersOf(account.id), []);
  });

  it('counts each operation as a write (minute and day) and the batch once in burst; over a layer, refused whole before anything runs', async () => {
    // The minute and day windows are aligned to the clock: this server's clock stands still, so the requests
    // below share one window, where the real clock could cross a minute between two of them (CI saw it).
    const frozenAt = Date.now();
    const own = await startTestServer({ now: () => frozenAt });
    try {
      const { account, key } = await own.createAccountWithKey({
        rateLimits: {
          burst_per_second: 1000,
          requests_per_minute_read: 1000,
          requests_per_minute_write: 12,
          requests_per_day_total: 100_000,
        },
      });
      const ops = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ method: 'POST', path: '/v1/customers', body: { full_name: `L${i}`, phone: '1' } }));
      const before = (await own.request('GET', '/v1/me', { key })).body.data.rate_limit_status;
      const first = await own.request('POST', '/v1/batch', { key, body: { operations: ops(5) } });
      assert.equal(first.status, 200);
      const mid = (await own.request('GET', '/v1/me', { key })).body.data.rate_limit_status;
      assert.equal(before.write.remaining - mid.write.remaining, 5);
      assert.equal(before.day.remaining - mid.day.remaining, 6, 'five writes and the /v1/me read');
      assert.equal(before.burst.remaining - mid.burst.remaining <= 2, true, 'the batch once, the read once (same second)');
      // 7 write slots left: a batch of 8 is refused whole, and then counts as one request.
      const refused = await own.request('POST', '/v1/batch', { key, body: { operations: ops(8) } });
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.body.detail, 'per minute');
      assert.equal(refused.headers.get('retry-after'), '60');
      assert.equal((await customersOf(account.id, own)).length, 5, 'nothing of the refused batch ran');
      // 6 left: a batch of 6 fits exactly.
      const fits = await own.request('POST', '/v1/batch', { key, body: { operations: ops(6) } });
      assert.equal(fits.status, 200, fits.text);
      assert.equal((await customersOf(account.id, own)).length, 11);
      const after = (await own.request('GET', '/v1/me', { key })).body.data.rate_limit_status;
      assert.equal(after.write.remaining, 0);
    } finally {
      await own.close();
    }
  });

  it('a batch in flight when the server starts a graceful stop finishes every operation', async () => {
    const own = await startTestServer();
    try {
      const { accountId, key } = await writer(own);
      const operations = Array.from({ length: 60 }, (_, i) => ({
        method: 'POST',
        path: '/v1/customers',
        body: { full_name: `G${i}`, phone: '1' },
      }));
      const pending = own.request('POST', '/v1/batch', { key, body: { operations } });
      // Close once the batch has started writing (its first customer exists).
      for (;;) {
        const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM customers WHERE team_id = ${accountId}`.execute(own.db);
        if ((rows.rows[0]?.n ?? 0) > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      const closing = own.app.close();
      const res = await pending;
      await closing;
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(new Set((res.body.data as Result[]).map((r) => r.status)), new Set([201]));
    } finally {
      await own.close().catch(() => {});
    }
  });
});
