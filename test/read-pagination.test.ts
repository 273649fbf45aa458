// Keyset pagination over HTTP: full traversals visit every record exactly once in the right
// order for every sort field in both directions, with ties broken by id and NULL sort values
// (nullable columns) crossing page boundaries; has_more / next_cursor exact.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { UNLIMITED, insertRows, readAll } from './helpers/read-data.ts';

type Row = Record<string, any>;

let s: TestServer;
let key: string;
let accountId: string;

before(async () => {
  s = await startTestServer();
  const created = await s.createAccountWithKey(UNLIMITED);
  key = created.key;
  accountId = created.account.id;
});
after(async () => s?.close());

const get = (path: string) => s.request('GET', path, { key });

/** Microsecond ISO strings: their text order is their time order, as in PostgreSQL. */
const at = (minute: number, micros = 0) => `2026-04-01T10:${String(minute).padStart(2, '0')}:00.${String(micros).padStart(6, '0')}Z`;

/** PostgreSQL's order: ASC puts NULLs last, DESC is the exact reverse (NULLs first); ties by id. */
function expectedOrder(rows: Row[], value: (r: Row) => string | number | null, desc: boolean): string[] {
  const sorted = [...rows].sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    if (va !== vb) {
      if (va === null) return 1;
      if (vb === null) return -1;
      return va < vb ? -1 : 1;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  const ids = sorted.map((r) => r.id as string);
  return desc ? ids.reverse() : ids;
}

async function traverse(path: string, limit: number, total: number): Promise<string[]> {
  const { items, pages } = await readAll(get, `${path}${path.includes('?') ? '&' : '?'}limit=${limit}`);
  assert.equal(pages, Math.max(1, Math.ceil(total / limit)), `${path}: one page per ${limit} records, no empty trailing page`);
  const ids = items.map((i) => i.id as string);
  assert.equal(new Set(ids).size, ids.length, `${path}: a record appeared twice`);
  return ids;
}

describe('full traversals', () => {
  test('customers: every sort, both directions, ties on the sort value broken by id, NULLs in updated_at', async () => {
    const inputs = Array.from({ length: 23 }, (_, i) => ({
      // 5 distinct creation instants (ties), two of them one microsecond apart within one millisecond.
      created_at: i % 5 === 4 ? at(i % 5, 123_457) : at(i % 5, i % 5 === 3 ? 123_456 : 0),
      updated_at: i % 3 === 0 ? null : at(30 + (i % 4)),
      full_name: ['ana', 'bruno', 'carla', 'ana', 'davi'][i % 5] as string,
    }));
    const rows = (await insertRows(s.db, 'customers', { accountId, mode: 'live' }, inputs)).map((r, i) => ({ ...r, input: inputs[i] }));
    const value: Record<string, (r: Row) => string | null> = {
      created_at: (r) => r.input.created_at,
      updated_at: (r) => r.input.updated_at,
      full_name: (r) => r.full_name,
    };
    for (const field of ['created_at', 'updated_at', 'full_name']) {
      for (const desc of [false, true]) {
        const expected = expectedOrder(rows, value[field]!, desc);
        for (const limit of [1, 4, 23, 100]) {
          const sort = `${desc ? '-' : ''}${field}`;
          assert.deepEqual(await traverse(`/v1/customers?sort=${sort}`, limit, rows.length), expected, `sort=${sort} limit=${limit}`);
        }
      }
    }
    // The default sort is -created_at.
    assert.deepEqual(await traverse('/v1/customers', 6, rows.length), expectedOrder(rows, value.created_at!, true));
  });

  test('sales: nullable numeric and timestamp sorts cross NULL boundaries in both directions; quotes never appear', async () => {
    const other = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: other.account.id, mode: 'live' as const };
    const inputs = Array.from({ length: 19 }, (_, i) => ({
      total_amount: i % 3 === 0 ? null : [5, 7.5, 7.5, 100][i % 4],
      sale_date: i % 4 === 1 ? null : at(i % 6, i),
      created_at: at(i),
    }));
    const rows = (await insertRows(s.db, 'transactions', tenant, inputs)).map((r, i) => ({ ...r, input: inputs[i] }));
    await insertRows(
      s.db,
      'transactions',
      tenant,
      inputs.map((r) => ({ ...r, transaction_type: 'quote' })),
    );
    const request = (path: string) => s.request('GET', path, { key: other.key });
    for (const [field, value] of [
      ['total_amount', (r: Row) => r.input.total_amount],
      ['sale_date', (r: Row) => r.input.sale_date],
      ['created_at', (r: Row) => r.input.created_at],
    ] as const) {
      for (const desc of [false, true]) {
        const expected = expectedOrder(rows, value, desc);
        for (const limit of [1, 2, 5]) {
          const path = `/v1/sales?sort=${desc ? '-' : ''}${field}&limit=${limit}`;
          const { items } = await readAll(request, path);
          assert.deepEqual(
            items.map((i) => i.id),
            expected,
            path,
          );
        }
      }
    }
  });

  test('appointments: a nullable created_at paginates with NULLs last ascending and first descending', async () => {
    const other = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: other.account.id, mode: 'live' as const };
    const inputs = Array.from({ length: 11 }, (_, i) => ({ created_at: i % 2 === 0 ? null : at(i % 3) }));
    const rows = (await insertRows(s.db, 'appointments', tenant, inputs)).map((r, i) => ({ ...r, input: inputs[i] }));
    const request = (path: string) => s.request('GET', path, { key: other.key });
    for (const desc of [false, true]) {
      const expected = expectedOrder(rows, (r) => r.input.created_at, desc);
      for (const limit of [1, 3]) {
        const { items } = await readAll(request, `/v1/appointments?sort=${desc ? '-' : ''}created_at&limit=${limit}`);
        assert.deepEqual(
          items.map((i) => i.id),
          expected,
        );
      }
    }
  });

  test('filters and a projection hold through a traversal; the cursor does not need the sort field projected', async () => {
    const other = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: other.account.id, mode: 'live' as const };
    const inputs = Array.from({ length: 30 }, (_, i) => ({ name: `p${i % 7}`, is_active: i % 3 !== 0, created_at: at(i % 10, i) }));
    const rows: Row[] = (await insertRows(s.db, 'catalog_items', tenant, inputs)).map((r, i) => ({ ...r, input: inputs[i] }));
    const active = rows.filter((r) => r.is_active);
    const { items } = await readAll(
      (p) => s.request('GET', p, { key: other.key }),
      '/v1/products?filter[is_active][eq]=true&sort=-name&fields=is_active&limit=4',
    );
    assert.deepEqual(
      items.map((i) => i.id),
      expectedOrder(active, (r) => r.name, true),
    );
    for (const item of items) assert.deepEqual(Object.keys(item), ['id', 'is_active']);
  });
});

describe('page envelope', () => {
  test('has_more and next_cursor are exact and the cursor lives in pagination only', async () => {
    const other = await s.createAccountWithKey(UNLIMITED);
    await insertRows(
      s.db,
      'services',
      { accountId: other.account.id, mode: 'live' },
      Array.from({ length: 6 }, (_, i) => ({ name: `s${i}` })),
    );
    const request = (path: string) => s.request('GET', path, { key: other.key });
    const first = await request('/v1/services?limit=3');
    assert.equal(first.body.data.length, 3);
    assert.equal(first.body.pagination.has_more, true);
    assert.equal(typeof first.body.pagination.next_cursor, 'string');
    assert.match(first.body.pagination.next_cursor, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(Object.keys(first.body.meta), ['request_id']);
    // Records carry exactly the resource's fields: the column read for the cursor never shows.
    const fields = Object.keys((await request(`/v1/services/${first.body.data[0].id}`)).body.data);
    for (const record of first.body.data) assert.deepEqual(Object.keys(record), fields);
    assert.ok(!fields.some((f) => f.startsWith('__')));
    const second = await request(`/v1/services?limit=3&cursor=${first.body.pagination.next_cursor}`);
    assert.equal(second.body.data.length, 3);
    assert.deepEqual(second.body.pagination, { next_cursor: null, has_more: false, limit: 3 });
    const all = await request('/v1/services?limit=6');
    assert.deepEqual(all.body.pagination, { next_cursor: null, has_more: false, limit: 6 });
    const empty = await s.request('GET', '/v1/bank-accounts', { key: other.key });
    assert.deepEqual(empty.body.data, []);
    assert.deepEqual(empty.body.pagination, { next_cursor: null, has_more: false, limit: 20 });
  });

  test('the cursor is base64url JSON holding the sort, the last sort value and the last id', async () => {
    const other = await s.createAccountWithKey(UNLIMITED);
    const [a] = await insertRows(s.db, 'customers', { accountId: other.account.id, mode: 'live' }, [
      { full_name: 'x', created_at: at(1, 500) },
      { full_name: 'y', created_at: at(2) },
    ]);
    const res = await s.request('GET', '/v1/customers?sort=created_at&limit=1', { key: other.key });
    const cursor = JSON.parse(Buffer.from(res.body.pagination.next_cursor, 'base64url').toString('utf8'));
    assert.deepEqual(cursor, { sort: 'created_at', value: at(1, 500), id: a!.id });
    const bad = await s.request('GET', `/v1/customers?sort=-created_at&cursor=${res.body.pagination.next_cursor}`, { key: other.key });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail, 'invalid_cursor');
  });
});
