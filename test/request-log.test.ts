// GET /v1/requests (issue 28): a key's own committed writes over 24 hours, with their X-Request-Id and the
// record written; filters, sort and cursors through the list engine; never another key's, account's or mode's.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { item, UNLIMITED, writer } from './helpers/write-fixtures.ts';

const FIELDS = ['created_at', 'idempotency_key', 'method', 'path', 'request_id', 'resource', 'resource_id', 'status'];

describe('the write log', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('lists each committed write with its request id and record, newest first; failed writes are absent', async () => {
    const { key } = await writer(s);
    const empty = await s.request('GET', '/v1/requests', { key });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body.data, []);
    const sale = await s.request('POST', '/v1/sales', {
      key,
      body: { items: [item()] },
      headers: { 'x-request-id': 'client-req-1', 'idempotency-key': 'idem-1' },
    });
    assert.equal(sale.status, 201);
    const id = sale.body.data.id;
    const patch = await s.request('PATCH', `/v1/sales/${id}`, {
      key,
      body: { status: 'completed' },
      headers: { 'x-request-id': 'client-req-2' },
    });
    assert.equal(patch.status, 200);
    const del = await s.request('DELETE', `/v1/sales/${id}`, { key, headers: { 'x-request-id': 'client-req-3' } });
    assert.equal(del.status, 204);
    // Not committed: a 422, a 404, a 412; a replay is not a second write. The 404s are a sale's and a customer's
    // change made in one statement, whose write-log entry goes in that statement (which then commits nothing).
    assert.equal((await s.request('POST', '/v1/sales', { key, body: { items: [] }, headers: { 'x-request-id': 'bad-1' } })).status, 422);
    assert.equal(
      (
        await s.request('PATCH', `/v1/sales/${id}`, {
          key,
          body: { notes: 'x' },
          headers: { 'if-match': '"old"', 'x-request-id': 'bad-2' },
        })
      ).status,
      412,
    );
    for (const path of [`/v1/sales/${randomUUID()}`, `/v1/customers/${randomUUID()}`])
      assert.equal((await s.request('PATCH', path, { key, body: { notes: 'x' }, headers: { 'x-request-id': 'bad-3' } })).status, 404);
    const replay = await s.request('POST', '/v1/sales', {
      key,
      body: { items: sale.body.data.items.map(() => item()) },
      headers: { 'idempotency-key': 'idem-1' },
    });
    assert.equal(replay.status, 409);

    const list = await s.request('GET', '/v1/requests', { key });
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.data.map((e: Record<string, unknown>) => [
        e.request_id,
        e.method,
        e.path,
        e.status,
        e.idempotency_key,
        e.resource,
        e.resource_id,
      ]),
      [
        ['client-req-3', 'DELETE', `/v1/sales/${id}`, 204, null, 'sales', id],
        ['client-req-2', 'PATCH', `/v1/sales/${id}`, 200, null, 'sales', id],
        ['client-req-1', 'POST', '/v1/sales', 201, 'idem-1', 'sales', id],
      ],
    );
    for (const e of list.body.data) assert.deepEqual(Object.keys(e).sort(), FIELDS);
    assert.deepEqual(list.body.pagination, { next_cursor: null, has_more: false, limit: 20 });
    assert.equal(list.body.meta.request_id, list.headers.get('x-request-id'));
  });

  it('filters by request id, idempotency key, resource and created_at; sorts and pages', async () => {
    const { key } = await writer(s);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await s.request('POST', '/v1/customers', {
        key,
        body: { full_name: `C${i}`, phone: '1' },
        headers: { 'x-request-id': `cust-${i}`, 'idempotency-key': `k-${i}` },
      });
      ids.push(res.body.data.id);
    }
    await s.request('POST', '/v1/suppliers', { key, body: { name: 'S' }, headers: { 'x-request-id': 'sup-1' } });
    const one = await s.request('GET', '/v1/requests?filter[request_id][eq]=cust-3', { key });
    assert.deepEqual(
      one.body.data.map((e: { resource_id: string }) => e.resource_id),
      [ids[3]],
    );
    const byKey = await s.request('GET', '/v1/requests?filter[idempotency_key][eq]=k-2', { key });
    assert.deepEqual(
      byKey.body.data.map((e: { request_id: string }) => e.request_id),
      ['cust-2'],
    );
    assert.equal((await s.request('GET', '/v1/requests?filter[resource][eq]=suppliers', { key })).body.data.length, 1);
    assert.equal((await s.request('GET', '/v1/requests?filter[resource][in]=suppliers,customers', { key })).body.data.length, 6);
    const all = (await s.request('GET', '/v1/requests?sort=created_at', { key })).body.data as { request_id: string; created_at: string }[];
    assert.deepEqual(
      all.map((e) => e.request_id),
      ['cust-0', 'cust-1', 'cust-2', 'cust-3', 'cust-4', 'sup-1'],
    );
    const since = await s.request('GET', `/v1/requests?filter[created_at][gte]=${encodeURIComponent(all[0]?.created_at as string)}`, {
      key,
    });
    assert.equal(since.body.data.length, 6);
    const before = await s.request('GET', `/v1/requests?filter[created_at][lt]=${encodeURIComponent(all[0]?.created_at as string)}`, {
      key,
    });
    assert.equal(before.body.data.length, 0);
    // Pages of two, newest first, by cursor.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { request_id: string }[]; pagination: { next_cursor: string | null } } } = await s.request(
        'GET',
        `/v1/requests?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { key },
      );
      seen.push(...page.body.data.map((e) => e.request_id));
      cursor = page.body.pagination.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, ['sup-1', 'cust-4', 'cust-3', 'cust-2', 'cust-1', 'cust-0']);
    const sparse = await s.request('GET', '/v1/requests?fields=request_id,status&limit=1', { key });
    assert.equal(sparse.status, 200, sparse.text);
    assert.deepEqual(sparse.body.data, [{ request_id: 'sup-1', status: 201 }]);
    // Outside the contract: 422 naming the parameter.
    const refused = await s.request('GET', '/v1/requests?filter[path][eq]=x', { key });
    assert.equal(refused.status, 422);
    assert.equal((await s.request('GET', '/v1/requests?filter[api_key_id][eq]=x', { key })).status, 422);
    assert.equal((await s.request('GET', '/v1/requests?sort=status', { key })).status, 422);
  });

  it('shows a key only its own entries: not another key, account or mode', async () => {
    const { account, key } = await s.createAccountWithKey({ rateLimits: UNLIMITED });
    const sibling = await s.createKey(account.id, { scopes: ['*:write'] });
    const testKey = await s.createKey(account.id, { scopes: ['*:write'], test: true });
    const stranger = await writer(s);
    const readOnly = await s.createKey(account.id, { scopes: [] });
    await s.request('POST', '/v1/customers', { key, body: { full_name: 'mine', phone: '1' }, headers: { 'x-request-id': 'mine-1' } });
    await s.request('POST', '/v1/customers', {
      key: sibling.key,
      body: { full_name: 'sib', phone: '1' },
      headers: { 'x-request-id': 'sib-1' },
    });
    await s.request('POST', '/v1/customers', {
      key: testKey.key,
      body: { full_name: 't', phone: '1' },
      headers: { 'x-request-id': 'test-1' },
    });
    await s.request('POST', '/v1/customers', {
      key: stranger.key,
      body: { full_name: 'x', phone: '1' },
      headers: { 'x-request-id': 'mine-1' },
    });
    const ids = async (k: string) =>
      ((await s.request('GET', '/v1/requests', { key: k })).body.data as { request_id: string }[]).map((e) => e.request_id);
    assert.deepEqual(await ids(key), ['mine-1']);
    assert.deepEqual(await ids(sibling.key), ['sib-1']);
    assert.deepEqual(await ids(testKey.key), ['test-1']);
    assert.deepEqual(await ids(stranger.key), ['mine-1']);
    // No scope needed beyond a valid key.
    const none = await s.request('GET', '/v1/requests', { key: readOnly.key });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body.data, []);
    assert.equal((await s.request('GET', '/v1/requests')).status, 401);
  });
});
