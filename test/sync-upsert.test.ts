// Keeping a copy in sync, the writing half (issue 49): external ids on customers, sales, suppliers and expenses,
// unique per account, mode and resource (409 `external_id_conflict` with `existing_id`, nothing written); the
// upsert `PUT /v1/<resource>/by-external-id/{external_id}` (created, updated, unchanged with no event, If-Match,
// Idempotency-Key, batch, scope, 20 racing PUTs of one new external id); and no echoes: the feed's
// `filter[origin_key_id][neq|nin]` and webhook endpoints' `excluded_key_ids`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { captured } from './helpers/captured.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { assertFieldError, item, UNLIMITED, writer } from './helpers/write-fixtures.ts';

const put = (s: TestServer, key: string, resource: string, externalId: string, body: unknown, headers: Record<string, string> = {}) =>
  s.request('PUT', `/v1/${resource}/by-external-id/${encodeURIComponent(externalId)}`, { key, body, headers });

/** The events of the tenant about record `id`, oldest first, once everything committed so far is captured. */
async function eventsOf(s: TestServer, accountId: string, id: string): Promise<string[]> {
  await captured(s.database);
  const { rows } = await sql<{ type: string }>`SELECT type FROM events WHERE team_id = ${accountId} AND data->'object'->>'id' = ${id}
    ORDER BY created_at, id`.execute(s.db);
  return rows.map((r) => r.type);
}

function assertConflict(res: { status: number; body: any; text: string }, existingId: string): void {
  assert.equal(res.status, 409, res.text);
  assert.match(res.body.type, /\/external_id_conflict$/);
  assert.equal(res.body.existing_id, existingId);
  assert.doesNotMatch(res.text, /external_id_key|constraint|duplicate/i);
}

describe('upsert by external id', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('creates (201, Location), then answers unchanged without writing, then updated', async () => {
    const { key, accountId } = await writer(s);
    const body = { full_name: 'Maria da Silva', email: 'maria@example.com', notes: 'loja 1' };
    const created = await put(s, key, 'customers', 'crm-42', body);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('balcao-upsert'), 'created');
    const record = created.body.data;
    assert.equal(record.external_id, 'crm-42');
    assert.equal(record.full_name, 'Maria da Silva');
    assert.equal(created.headers.get('location'), `/v1/customers/${record.id}`);
    const tag = created.headers.get('etag');
    assert.ok(tag);
    const read = await s.request('GET', `/v1/customers/${record.id}`, { key });
    assert.equal(read.headers.get('etag'), tag);

    const same = await put(s, key, 'customers', 'crm-42', { ...body, external_id: 'crm-42' });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.headers.get('balcao-upsert'), 'unchanged');
    assert.equal(same.headers.get('etag'), tag);
    assert.equal(same.body.data.updated_at, null);
    assert.deepEqual(same.body.data, read.body.data);

    const changed = await put(s, key, 'customers', 'crm-42', { ...body, notes: 'loja 2' });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.headers.get('balcao-upsert'), 'updated');
    assert.notEqual(changed.headers.get('etag'), tag);
    assert.equal(changed.body.data.notes, 'loja 2');
    assert.equal(changed.body.data.id, record.id);
    assert.ok(changed.body.data.updated_at);
    // An amount given as another number of the same value changes nothing either (compared in the column's type).
    const again = await put(s, key, 'customers', 'crm-42', { ...body, notes: 'loja 2' });
    assert.equal(again.headers.get('balcao-upsert'), 'unchanged');
    assert.equal(again.headers.get('etag'), changed.headers.get('etag'));
    assert.deepEqual(await eventsOf(s, accountId, record.id), ['customer.created', 'customer.updated']);
  });

  it('refuses a body whose external_id differs from the path, and an invalid external id in the path', async () => {
    const { key } = await writer(s);
    const mismatch = await put(s, key, 'customers', 'a-1', { full_name: 'Ana', phone: '1', external_id: 'b-2' });
    assertFieldError(mismatch, 'external_id', 'external_id_mismatch');
    // A body that is not a valid POST body is refused whatever the outcome would be.
    assertFieldError(await put(s, key, 'customers', 'a-1', { phone: '1' }), 'full_name', 'required');
    const tooLong = await put(s, key, 'customers', 'x'.repeat(101), { full_name: 'Ana', phone: '1' });
    assert.equal(tooLong.status, 422, tooLong.text);
    const control = await s.request('PUT', '/v1/customers/by-external-id/a%01b', { key, body: { full_name: 'Ana', phone: '1' } });
    assert.equal(control.status, 422, control.text);
    const none = await s.request('GET', '/v1/customers?filter[external_id][eq]=a-1', { key });
    assert.equal(none.body.data.length, 0, 'nothing was written');
    // Any other character goes, percent-encoded: a slash, spaces, accents; compared exactly.
    const odd = 'Pedido/Nº 7 ção';
    const created = await put(s, key, 'customers', odd, { full_name: 'Ana', phone: '1' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.data.external_id, odd);
    assert.equal((await put(s, key, 'customers', odd.toUpperCase(), { full_name: 'Ana', phone: '1' })).status, 201);
    assert.equal((await put(s, key, 'customers', odd, { full_name: 'Ana', phone: '1' })).headers.get('balcao-upsert'), 'unchanged');
  });

  it('takes If-Match as PATCH does, and fails it when there is no record', async () => {
    const { key } = await writer(s);
    const body = { full_name: 'Bia', phone: '11 1111-1111' };
    assert.equal((await put(s, key, 'customers', 'im-1', body, { 'if-match': '*' })).status, 412);
    const created = await put(s, key, 'customers', 'im-1', body);
    const tag = created.headers.get('etag') as string;
    const stale = await put(s, key, 'customers', 'im-1', { ...body, notes: 'x' }, { 'if-match': '"stale"' });
    assert.equal(stale.status, 412, stale.text);
    const ok = await put(s, key, 'customers', 'im-1', { ...body, notes: 'x' }, { 'if-match': tag });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get('balcao-upsert'), 'updated');
  });

  it('takes an Idempotency-Key as POST does: the same request is replayed', async () => {
    const { key, accountId } = await writer(s);
    const headers = { 'idempotency-key': randomUUID() };
    const body = { full_name: 'Caio', phone: '21 2222-2222' };
    const first = await put(s, key, 'customers', 'idem-1', body, headers);
    assert.equal(first.status, 201, first.text);
    const replay = await put(s, key, 'customers', 'idem-1', body, headers);
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers.get('idempotent-replay'), 'true');
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('balcao-upsert'), 'created');
    assert.equal(replay.headers.get('location'), first.headers.get('location'));
    assert.equal(replay.headers.get('etag'), first.headers.get('etag'));
    const other = await put(s, key, 'customers', 'idem-1', { ...body, notes: 'other' }, headers);
    assert.equal(other.status, 409, other.text);
    assert.match(other.body.type, /\/idempotency_conflict$/);
    assert.deepEqual(await eventsOf(s, accountId, first.body.data.id), ['customer.created']);
  });

  it('is an operation of POST /v1/batch', async () => {
    const { key } = await writer(s);
    const res = await s.request('POST', '/v1/batch', {
      key,
      body: {
        atomic: true,
        operations: [
          { method: 'PUT', path: '/v1/suppliers/by-external-id/erp-7', body: { name: 'Distribuidora Silva' } },
          { method: 'PUT', path: '/v1/suppliers/by-external-id/erp-7', body: { name: 'Distribuidora Silva Ltda' } },
          { method: 'PUT', path: '/v1/suppliers/by-external-id/erp-7', body: { name: 'Distribuidora Silva Ltda' } },
        ],
      },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.data.map((r: { status: number }) => r.status),
      [201, 200, 200],
    );
    const [a, b, c] = res.body.data;
    assert.equal(a.body.data.id, b.body.data.id);
    assert.equal(b.body.data.name, 'Distribuidora Silva Ltda');
    assert.equal(c.etag, b.etag, 'the third changed nothing');
    const refused = await s.request('POST', '/v1/batch', {
      key,
      body: { operations: [{ method: 'PUT', path: '/v1/products/by-external-id/x', body: {} }] },
    });
    assertFieldError(refused, 'operations[0].path', 'invalid_path');
  });

  it("needs the resource's write scope", async () => {
    const { key } = await writer(s, { scopes: ['customers:read', 'sales:write'] });
    const res = await put(s, key, 'customers', 'sc-1', { full_name: 'Ana', phone: '1' });
    assert.equal(res.status, 403, res.text);
    assert.match(res.body.type, /\/insufficient_scope$/);
  });

  it('creates one sale and one sale.created event out of 20 concurrent PUTs of one new external id', async () => {
    const { key, accountId } = await writer(s);
    const body = { items: [item({ quantity: 2, unit_price: 19.99 })], payment_method: 'pix' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => put(s, key, 'sales', 'loja-pedido-1001', body)));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [...Array(19).fill(200), 201].sort(), answers.map((a) => a.text).join('\n'));
    const ids = new Set(answers.map((a) => a.body.data.id));
    assert.equal(ids.size, 1);
    const id = String([...ids][0]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM transactions WHERE team_id = ${accountId}`.execute(s.db);
    assert.equal(rows[0]?.n, 1);
    assert.deepEqual(await eventsOf(s, accountId, id), ['sale.created']);
    const created = answers.find((a) => a.status === 201);
    assert.equal(created?.body.data.items.length, 1, 'a created sale answers with its items, as POST does');
    assert.ok(answers.filter((a) => a.status === 200).every((a) => a.headers.get('balcao-upsert') === 'unchanged'));
  });

  it('applies an existing sale as PATCH would: items ignored, a status change recorded', async () => {
    const { key, accountId } = await writer(s);
    const body = { items: [item()], status: 'pending' };
    const created = await put(s, key, 'sales', 'ped-9', body);
    assert.equal(created.status, 201, created.text);
    const more = await put(s, key, 'sales', 'ped-9', { ...body, items: [item(), item()] });
    assert.equal(more.headers.get('balcao-upsert'), 'unchanged', 'a sale\u2019s items are for its creation only');
    const paid = await put(s, key, 'sales', 'ped-9', { ...body, status: 'completed', delivery_fee: 5 });
    assert.equal(paid.headers.get('balcao-upsert'), 'updated');
    assert.equal(paid.body.data.status, 'completed');
    assert.equal(paid.body.data.total_amount, 15);
    const fee = await put(s, key, 'sales', 'ped-9', { ...body, status: 'completed', delivery_fee: 5.0 });
    assert.equal(fee.headers.get('balcao-upsert'), 'unchanged');
    const history = await s.request('GET', `/v1/sales/${created.body.data.id}?include=status_history`, { key });
    assert.deepEqual(
      history.body.data.status_history.map((h: { new_status: string }) => h.new_status),
      ['pending', 'completed'],
    );
    assert.deepEqual(await eventsOf(s, accountId, created.body.data.id), ['sale.created', 'sale.updated']);
  });

  it('upserts expenses', async () => {
    const { key } = await writer(s);
    const body = { expense_type: 'fixed', description: 'Aluguel', original_amount: 1500, final_amount: 1500 };
    assert.equal((await put(s, key, 'expenses', 'desp-1', body)).status, 201);
    assert.equal((await put(s, key, 'expenses', 'desp-1', { ...body, original_amount: 1500.0 })).headers.get('balcao-upsert'), 'unchanged');
    const changed = await put(s, key, 'expenses', 'desp-1', { ...body, final_amount: 1400 });
    assert.equal(changed.headers.get('balcao-upsert'), 'updated');
    assert.equal(changed.body.data.final_amount, 1400);
  });
});

describe('external ids', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('are unique per account, mode and resource across POST and PATCH: 409 with existing_id, nothing written', async () => {
    const { key, accountId } = await writer(s);
    const first = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', phone: '1', external_id: 'c-1' } });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.data.external_id, 'c-1');
    const count = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM customers WHERE team_id = ${accountId}`.execute(s.db)).rows[0]?.n;
    assertConflict(
      await s.request('POST', '/v1/customers', { key, body: { full_name: 'Bia', phone: '2', external_id: 'c-1' } }),
      first.body.data.id,
    );
    assert.equal(await count(), 1);
    // Case matters: another external id.
    const second = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Bia', phone: '2', external_id: 'C-1' } });
    assert.equal(second.status, 201, second.text);
    const before = await s.request('GET', `/v1/customers/${second.body.data.id}`, { key });
    const patched = await s.request('PATCH', `/v1/customers/${second.body.data.id}`, { key, body: { external_id: 'c-1', notes: 'x' } });
    assertConflict(patched, first.body.data.id);
    const unchanged = await s.request('GET', `/v1/customers/${second.body.data.id}`, { key });
    assert.deepEqual(unchanged.body.data, before.body.data);
    assert.equal(unchanged.headers.get('etag'), before.headers.get('etag'));
    // A PATCH giving a record its own external id again is no conflict.
    assert.equal((await s.request('PATCH', `/v1/customers/${first.body.data.id}`, { key, body: { external_id: 'c-1' } })).status, 200);
    // PATCH null clears it, and the external id is free for another record.
    const cleared = await s.request('PATCH', `/v1/customers/${first.body.data.id}`, { key, body: { external_id: null } });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.data.external_id, null);
    const taken = await s.request('PATCH', `/v1/customers/${second.body.data.id}`, { key, body: { external_id: 'c-1' } });
    assert.equal(taken.status, 200, taken.text);
    assert.equal(taken.body.data.external_id, 'c-1');
    // Another resource, another mode, another account: each has its own.
    assert.equal((await s.request('POST', '/v1/suppliers', { key, body: { name: 'F', external_id: 'c-1' } })).status, 201);
    const testMode = await writer(s, { test: true });
    assert.equal(
      (await s.request('POST', '/v1/customers', { key: testMode.key, body: { full_name: 'T', phone: '1', external_id: 'c-1' } })).status,
      201,
    );
    // The upsert's creation meets the same rule: a POST's external id is the upsert's record.
    const upsert = await put(s, key, 'customers', 'c-1', { full_name: 'Bia', phone: '2' });
    assert.equal(upsert.status, 200);
    assert.equal(upsert.body.data.id, second.body.data.id);
  });

  it('refuses an empty, too long or control-character external id', async () => {
    const { key } = await writer(s);
    for (const bad of ['', 'x'.repeat(101), 'a\u0007b', 'tab\there']) {
      const res = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', phone: '1', external_id: bad } });
      assert.equal(res.status, 422, `${JSON.stringify(bad)}: ${res.text}`);
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === 'external_id'),
        res.text,
      );
    }
    const longest = 'é'.repeat(100);
    const ok = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', phone: '1', external_id: longest } });
    assert.equal(ok.status, 201, ok.text);
  });

  it('filter the four lists with filter[external_id][eq|in]', async () => {
    const { key } = await writer(s);
    const made: Record<string, string[]> = {};
    const bodies: Record<string, (n: number) => unknown> = {
      customers: (n) => ({ full_name: `C${n}`, phone: '1' }),
      sales: () => ({ items: [item()] }),
      suppliers: (n) => ({ name: `S${n}` }),
      expenses: () => ({ expense_type: 'fixed', description: 'D', original_amount: 1, final_amount: 1 }),
    };
    for (const [resource, body] of Object.entries(bodies)) {
      made[resource] = [];
      for (const n of [1, 2, 3]) {
        const res = await put(s, key, resource, `${resource}-${n}`, body(n));
        assert.equal(res.status, 201, res.text);
        made[resource]?.push(res.body.data.id);
      }
      const eq = await s.request('GET', `/v1/${resource}?filter[external_id][eq]=${resource}-2`, { key });
      assert.deepEqual(
        eq.body.data.map((r: { id: string }) => r.id),
        [made[resource]?.[1]],
      );
      const inList = await s.request('GET', `/v1/${resource}?filter[external_id][in]=${resource}-1,${resource}-3&sort=created_at`, { key });
      assert.deepEqual(
        inList.body.data.map((r: { external_id: string }) => r.external_id),
        [`${resource}-1`, `${resource}-3`],
      );
      const like = await s.request('GET', `/v1/${resource}?filter[external_id][ilike]=x%25`, { key });
      assert.equal(like.status, 422);
      assert.equal(like.body.detail, 'filter_operator_not_allowed:external_id:ilike');
    }
  });
});

describe('no echoes', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({
      env: { BALCAO_WEBHOOK_ALLOW_PRIVATE: '1', BALCAO_WEBHOOK_RETRY_SCHEDULE: '0.05', BALCAO_WEBHOOK_TIMEOUT_SECONDS: '5' },
    });
  });
  after(() => s.close());

  it('the feed leaves out the events of the keys in filter[origin_key_id][neq|nin], never those made outside the API', async () => {
    const { account, key: mine, keyId: myKeyId } = await s.createAccountWithKey({ rateLimits: UNLIMITED });
    const other = await s.createKey(account.id, { scopes: ['*:write', 'events:read'] });
    const third = await s.createKey(account.id, { scopes: ['*:write'] });
    const me = await s.request('GET', '/v1/me', { key: mine });
    assert.equal(me.body.data.key_id, myKeyId);
    const a = await s.request('POST', '/v1/customers', { key: mine, body: { full_name: 'Mine', phone: '1' } });
    const b = await s.request('POST', '/v1/customers', { key: other.key, body: { full_name: 'Other', phone: '1' } });
    const c = await s.request('POST', '/v1/customers', { key: third.key, body: { full_name: 'Third', phone: '1' } });
    await sql`UPDATE customers SET notes = 'outside' WHERE id = ${a.body.data.id}`.execute(s.db);
    await captured(s.database);
    const feed = async (query: string) => {
      const res = await s.request('GET', `/v1/events?sort=created_at${query}`, { key: mine });
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((e: { type: string; data: { object: { full_name: string } } }) => `${e.type}:${e.data.object.full_name}`);
    };
    assert.deepEqual(await feed(''), [
      'customer.created:Mine',
      'customer.created:Other',
      'customer.created:Third',
      'customer.updated:Mine',
    ]);
    assert.deepEqual(await feed(`&filter[origin_key_id][neq]=${myKeyId}`), [
      'customer.created:Other',
      'customer.created:Third',
      'customer.updated:Mine',
    ]);
    assert.deepEqual(await feed(`&filter[origin_key_id][nin]=${myKeyId},${other.id.toUpperCase()}`), [
      'customer.created:Third',
      'customer.updated:Mine',
    ]);
    assert.ok(b.status === 201 && c.status === 201);
    const bad = await s.request('GET', '/v1/events?filter[origin_key_id][neq]=nope', { key: mine });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail, 'filter_value_invalid:origin_key_id');
    const op = await s.request('GET', `/v1/events?filter[origin_key_id][eq]=${myKeyId}`, { key: mine });
    assert.equal(op.status, 422);
    assert.equal(op.body.detail, 'filter_operator_not_allowed:origin_key_id:eq');
  });

  it('a webhook endpoint with excluded_key_ids is not sent the events of those keys, and is sent the others', async () => {
    const receiver = await startReceiver();
    try {
      const { account, key: integration, keyId: integrationKeyId } = await s.createAccountWithKey({ rateLimits: UNLIMITED });
      const staff = await s.createKey(account.id, { scopes: ['*:write'] });
      const stranger = await s.createAccountWithKey();
      const tooMany = Array.from({ length: 11 }, () => randomUUID());
      const refused = await s.request('POST', '/v1/webhook-endpoints', {
        key: integration,
        body: { url: receiver.url, excluded_key_ids: tooMany },
      });
      assertFieldError(refused, 'excluded_key_ids', 'too_long');
      const foreign = await s.request('POST', '/v1/webhook-endpoints', {
        key: integration,
        body: { url: receiver.url, excluded_key_ids: [integrationKeyId, stranger.keyId] },
      });
      assertFieldError(foreign, 'excluded_key_ids[1]', 'not_found');
      const created = await s.request('POST', '/v1/webhook-endpoints', {
        key: integration,
        body: { url: receiver.url, excluded_key_ids: [integrationKeyId] },
      });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.data.excluded_key_ids, [integrationKeyId]);
      const shown = await s.request('GET', `/v1/webhook-endpoints/${created.body.data.id}`, { key: integration });
      assert.deepEqual(shown.body.data.excluded_key_ids, [integrationKeyId]);

      await put(s, integration, 'customers', 'mine-1', { full_name: 'Own write', phone: '1' });
      const theirs = await s.request('POST', '/v1/customers', { key: staff.key, body: { full_name: 'Staff write', phone: '1' } });
      assert.equal(theirs.status, 201);
      await receiver.until((r) => r.length >= 1);
      await captured(s.database);
      const { rows } = await sql<{ name: string }>`SELECT e.data->'object'->>'full_name' AS name FROM webhook_deliveries d
        JOIN events e ON e.team_id = d.team_id AND e.id = d.event_id WHERE d.endpoint_id = ${created.body.data.id}`.execute(s.db);
      assert.deepEqual(
        rows.map((r) => r.name),
        ['Staff write'],
      );
      assert.deepEqual(
        receiver.received.map((r) => JSON.parse(r.body).data.object.full_name),
        ['Staff write'],
      );
      // A replay honours the exclusion too.
      const replay = await s.request('POST', `/v1/webhook-endpoints/${created.body.data.id}/replay`, {
        key: integration,
        body: { since: '2000-01-01T00:00:00Z' },
      });
      assert.equal(replay.status, 202, replay.text);
      assert.equal(replay.body.data.queued, 1);

      // Cleared by PATCH: the integration's writes are sent again.
      const patched = await s.request('PATCH', `/v1/webhook-endpoints/${created.body.data.id}`, {
        key: integration,
        body: { excluded_key_ids: [] },
      });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(patched.body.data.excluded_key_ids, []);
      await put(s, integration, 'customers', 'mine-2', { full_name: 'Own write 2', phone: '1' });
      await receiver.until((r) => r.some((x) => JSON.parse(x.body).data.object.full_name === 'Own write 2'));
    } finally {
      await receiver.close();
    }
  });
});
