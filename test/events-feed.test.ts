// The change feed over HTTP (GET /v1/events): one event per successful write with the record as
// GET returns it, previous_attributes and request_id; nothing for an idempotent replay; forward
// walks that always return a cursor; filters; the long poll; scopes, modules, accounts and modes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { longPollHooks } from '../src/events/event-routes.ts';
import { importObject } from '../src/import/stream-import.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { item, UNLIMITED, writer } from './helpers/write-fixtures.ts';

type Event = { id: string; type: string; created_at: string; data: { object: any; previous_attributes: any }; request_id: string | null };

async function walk(s: TestServer, key: string, query = ''): Promise<{ events: Event[]; cursor: string }> {
  const events: Event[] = [];
  let cursor = '';
  for (let page = 0; page < 50; page++) {
    const res = await s.request('GET', `/v1/events?sort=created_at&limit=3${query}${cursor ? `&cursor=${cursor}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.data);
    assert.ok(res.body.pagination.next_cursor, 'a forward page always has a next_cursor');
    cursor = res.body.pagination.next_cursor;
    if (!res.body.pagination.has_more) break;
  }
  return { events, cursor };
}

describe('events feed', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('records one event per write, with the record as GET returns it, previous_attributes and request_id', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', email: 'ana@example.com' } });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    const patched = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { full_name: 'Ana Maria', notes: 'vip' } });
    assert.equal(patched.status, 200);
    const deleted = await s.request('DELETE', `/v1/customers/${id}`, { key });
    assert.equal(deleted.status, 204);
    const current = (await s.request('GET', `/v1/customers/${id}`, { key })).body.data;

    const { events } = await walk(s, key);
    assert.deepEqual(
      events.map((e) => e.type),
      ['customer.created', 'customer.updated', 'customer.deleted'],
    );
    const [c, u, d] = events as [Event, Event, Event];
    assert.deepEqual(c.data.object, created.body.data);
    assert.equal(c.data.previous_attributes, null);
    assert.equal(c.request_id, created.headers.get('x-request-id'));
    assert.deepEqual(u.data.object, patched.body.data);
    assert.deepEqual(u.data.previous_attributes, { full_name: 'Ana', notes: null });
    assert.equal(u.request_id, patched.headers.get('x-request-id'));
    assert.deepEqual(d.data.object, current);
    assert.equal(d.data.object.is_active, false);
    assert.equal(d.data.previous_attributes, null);
    assert.equal(d.request_id, deleted.headers.get('x-request-id'));
    assert.ok(c.id < u.id && u.id < d.id, 'ids are ordered by creation');
    assert.match(c.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const one = await s.request('GET', `/v1/events/${u.id}`, { key });
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.data, u);
  });

  it('gives a sale status change as sale.updated with the old status, and DELETE as sale.deleted', async () => {
    const { key } = await writer(s);
    const sale = await s.request('POST', '/v1/sales', { key, body: { items: [item()], status: 'pending' } });
    assert.equal(sale.status, 201, sale.text);
    const id = sale.body.data.id;
    assert.equal((await s.request('PATCH', `/v1/sales/${id}`, { key, body: { status: 'completed' } })).status, 200);
    assert.equal((await s.request('DELETE', `/v1/sales/${id}`, { key })).status, 204);
    const { events } = await walk(s, key);
    assert.deepEqual(
      events.map((e) => e.type),
      ['sale.created', 'sale.updated', 'sale.deleted'],
    );
    const { items: _items, ...withoutItems } = sale.body.data;
    assert.deepEqual(events[0]?.data.object, withoutItems);
    assert.equal(events[1]?.data.previous_attributes.status, 'pending');
    assert.equal(events[1]?.data.object.status, 'completed');
    assert.equal(events[2]?.data.object.status, 'cancelled');
  });

  it('emits nothing for an idempotent replay nor for a refused write', async () => {
    const { key } = await writer(s);
    const headers = { 'idempotency-key': 'once' };
    const first = await s.request('POST', '/v1/suppliers', { key, body: { name: 'Fornecedor' }, headers });
    assert.equal(first.status, 201, first.text);
    const replay = await s.request('POST', '/v1/suppliers', { key, body: { name: 'Fornecedor' }, headers });
    assert.equal(replay.headers.get('idempotent-replay'), 'true');
    assert.equal((await s.request('POST', '/v1/suppliers', { key, body: {} })).status, 422);
    const { events } = await walk(s, key);
    assert.deepEqual(
      events.map((e) => e.type),
      ['supplier.created'],
    );
  });

  it('emits nothing for balcao import', async () => {
    const { key, accountId } = await writer(s);
    const result = await importObject(
      s.database,
      { customers: [{ full_name: 'Imported', email: 'i@example.com' }], suppliers: [{ name: 'Imported' }] },
      { accountId, mode: 'live' },
    );
    assert.ok(result);
    assert.equal((await s.request('GET', '/v1/customers', { key })).body.data.length, 1);
    // A write after it: the feed read waits for that write's event, which capture makes after any of the import's.
    assert.equal((await s.request('POST', '/v1/suppliers', { key, body: { name: 'Depois' } })).status, 201);
    assert.deepEqual(
      (await walk(s, key)).events.map((e) => e.type),
      ['supplier.created'],
    );
  });

  it('walks forward from a stored cursor, with type and created_at filters', async () => {
    const { key } = await writer(s);
    const empty = await walk(s, key);
    assert.equal(empty.events.length, 0);
    for (let i = 0; i < 4; i++) await s.request('POST', '/v1/customers', { key, body: { full_name: `C${i}`, email: `c${i}@example.com` } });
    await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
    const resumed = await walk(s, key, '');
    assert.equal(resumed.events.length, 5);
    const fromStored = await s.request('GET', `/v1/events?sort=created_at&cursor=${empty.cursor}`, { key });
    assert.equal(fromStored.body.data.length, 5);
    const atEnd = await s.request('GET', `/v1/events?sort=created_at&cursor=${resumed.cursor}`, { key });
    assert.deepEqual(atEnd.body.data, []);
    assert.equal(atEnd.body.pagination.next_cursor, resumed.cursor);
    await s.request('POST', '/v1/customers', { key, body: { full_name: 'Late', email: 'late@example.com' } });
    const next = await s.request('GET', `/v1/events?sort=created_at&cursor=${resumed.cursor}`, { key });
    assert.deepEqual(
      next.body.data.map((e: Event) => e.data.object.full_name),
      ['Late'],
    );

    const suppliers = await s.request('GET', '/v1/events?filter[type][in]=supplier.created,sale.created', { key });
    assert.deepEqual(
      suppliers.body.data.map((e: Event) => e.type),
      ['supplier.created'],
    );
    const first = resumed.events[0] as Event;
    const since = await s.request('GET', `/v1/events?filter[created_at][gt]=${first.created_at}&filter[type][eq]=customer.created`, {
      key,
    });
    assert.ok(since.body.data.every((e: Event) => e.created_at > first.created_at));
    assert.equal(
      (await s.request('GET', '/v1/events?filter[type][ilike]=x', { key })).body.detail,
      'filter_operator_not_allowed:type:ilike',
    );
    assert.equal((await s.request('GET', '/v1/events?sort=updated_at', { key })).body.detail, 'sort_field_not_allowed:updated_at');
    assert.equal((await s.request('GET', '/v1/events?sort=created_at&wait=31', { key })).body.detail, 'invalid_wait');
  });

  it('lists no event older than 30 days, newest first, forward, and with keys left out', async () => {
    const { key } = await writer(s);
    const ids: string[] = [];
    for (const name of ['Old', 'Month', 'Now']) {
      const created = await s.request('POST', '/v1/customers', { key, body: { full_name: name, phone: '1' } });
      assert.equal(created.status, 201, created.text);
      ids.push(created.body.data.id);
    }
    const events = (await walk(s, key)).events;
    assert.equal(events.length, 3);
    const [old, month] = events as [Event, Event, Event];
    await sql`UPDATE events SET created_at = created_at - interval '31 days' WHERE id = ${old.id}`.execute(s.db);
    await sql`UPDATE events SET created_at = created_at - interval '29 days' WHERE id = ${month.id}`.execute(s.db);
    const names = (page: Event[]) => page.map((e) => e.data.object.full_name);
    const newest = await s.request('GET', '/v1/events?limit=10', { key });
    assert.equal(newest.status, 200, newest.text);
    assert.deepEqual(names(newest.body.data), ['Now', 'Month']);
    assert.deepEqual(names((await walk(s, key)).events), ['Month', 'Now']);
    // Leaving out another key's writes takes the list's other path: the same retention.
    const others = await s.request('GET', '/v1/events?limit=10&filter[origin_key_id][neq]=00000000-0000-4000-8000-000000000001', { key });
    assert.equal(others.status, 200, others.text);
    assert.deepEqual(names(others.body.data), ['Now', 'Month']);
  });

  it('holds a long poll until an event arrives', async () => {
    const { key, keyId } = await writer(s);
    const { cursor } = await walk(s, key);
    // Written once the poll is held (the server's signal, no sleep): the wake-up comes from the event.
    const isHeld = new Promise<void>((resolve) => {
      longPollHooks.held = (id) => id === keyId && resolve();
    });
    try {
      const held = s.request('GET', `/v1/events?sort=created_at&wait=30&cursor=${cursor}`, { key });
      await isHeld;
      await s.request('POST', '/v1/customers', { key, body: { full_name: 'Wake', email: 'wake@example.com' } });
      const res = await held;
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.data.map((e: Event) => e.type),
        ['customer.created'],
      );
    } finally {
      delete longPollHooks.held;
    }
  });

  it('does not miss an event committed between the first look and the wait', async () => {
    const { key, keyId } = await writer(s);
    const { cursor } = await walk(s, key);
    // The event commits (and is notified) after the first look found nothing and before the poll waits.
    // Missed, the poll would answer an empty page at its 30 s deadline; caught, it answers with the event.
    let written = false;
    longPollHooks.afterFirstLook = async (id) => {
      if (id !== keyId || written) return;
      written = true;
      const res = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Race', email: 'race@example.com' } });
      assert.equal(res.status, 201, res.text);
    };
    try {
      const res = await s.request('GET', `/v1/events?sort=created_at&wait=30&cursor=${cursor}`, { key });
      assert.equal(written, true);
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.data.map((e: Event) => e.data.object.full_name),
        ['Race'],
      );
    } finally {
      delete longPollHooks.afterFirstLook;
    }
  });

  it('answers a long poll at the deadline with an empty page and the same cursor', async () => {
    const { key } = await writer(s);
    const { cursor } = await walk(s, key);
    const res = await s.request('GET', `/v1/events?sort=created_at&wait=1&cursor=${cursor}`, { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.pagination.next_cursor, cursor);
  });

  it('shows a key only the events of resources it may read, in its account and mode', async () => {
    const owner = await writer(s);
    await s.request('POST', '/v1/customers', { key: owner.key, body: { full_name: 'A', email: 'a@example.com' } });
    await s.request('POST', '/v1/suppliers', { key: owner.key, body: { name: 'S' } });
    const customersOnly = await s.createKey(owner.accountId, { scopes: ['customers:read', 'events:read'] });
    const seen = await walk(s, customersOnly.key);
    assert.deepEqual(
      seen.events.map((e) => e.type),
      ['customer.created'],
    );
    const noEvents = await s.createKey(owner.accountId, { scopes: ['customers:read'] });
    const refused = await s.request('GET', '/v1/events', { key: noEvents.key });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.type.endsWith('/insufficient_scope'), true);

    const testKey = await s.createKey(owner.accountId, { test: true, scopes: ['*:read'] });
    assert.deepEqual((await walk(s, testKey.key)).events, []);
    const stranger = await writer(s);
    assert.deepEqual((await walk(s, stranger.key)).events, []);
    const ownEvent = seen.events[0] as Event;
    assert.equal((await s.request('GET', `/v1/events/${ownEvent.id}`, { key: stranger.key })).status, 404);

    // Module off the contract: the key's events of that module disappear too.
    const account = await s.createAccount({ modules: ['clientes'], rateLimits: UNLIMITED });
    const k = await s.createKey(account.id, { scopes: ['*:write'] });
    await s.request('POST', '/v1/customers', { key: k.key, body: { full_name: 'M', email: 'm@example.com' } });
    assert.deepEqual(
      (await walk(s, k.key)).events.map((e) => e.type),
      ['customer.created'],
    );
  });
});
