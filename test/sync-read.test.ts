// Keeping a copy in sync, the reading half (issue 49): includes on lists (with cursors, `fields` and filters, one
// statement per include per page, one read per page), `filter[updated_at]` and `filter[id]` ranges on every list,
// `count=exact|estimated`, and digests checked against the same figures computed here with node:crypto.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RESOURCES } from '../src/resources/registry.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { TABLES, UNLIMITED, insertRows, readAll } from './helpers/read-data.ts';
import { StatementRecorder } from './helpers/statement-recorder.ts';
import { item } from './helpers/write-fixtures.ts';

type Row = Record<string, any>;

// The rate windows never roll over during the file: a page's cost is read from X-RateLimit-Remaining.
const T0 = Date.now();
const recorder = new StatementRecorder();
let s: TestServer;
let key: string;
let tenant: { accountId: string; mode: 'live' };

const get = (path: string) => s.request('GET', path, { key });
const send = (method: string, path: string, body?: unknown) => s.request(method, path, { key, body });

before(async () => {
  s = await startTestServer({ plugin: recorder, now: () => T0 });
  const created = await s.createAccountWithKey(UNLIMITED);
  key = created.key;
  tenant = { accountId: created.account.id, mode: 'live' };
});
after(async () => s?.close());

/** What a client with a correct copy computes for a digest level: per child prefix, count and SHA-256 of its lines. */
function clientDigest(records: readonly Row[], prefix = ''): { prefix: string; count: number; sha256: string }[] {
  const byChild = new Map<string, Row[]>();
  for (const r of [...records].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    if (!r.id.startsWith(prefix)) continue;
    const child = r.id.slice(0, prefix.length + 1);
    byChild.set(child, [...(byChild.get(child) ?? []), r]);
  }
  return [...byChild.keys()].sort().map((child) => {
    const rows = byChild.get(child) as Row[];
    const text = rows.map((r) => `${r.id}:${r.updated_at ?? ''}\n`).join('');
    return { prefix: child, count: rows.length, sha256: createHash('sha256').update(text, 'utf8').digest('hex') };
  });
}

/** How many reads of the key's minute window `act` cost, from GET /v1/me before and after (itself one read). */
async function readsCostBy(act: () => Promise<unknown>): Promise<number> {
  const left = async () => (await get('/v1/me')).body.data.rate_limit_status.read.remaining as number;
  const before = await left();
  await act();
  return before - (await left()) - 1;
}

async function digest(path: string, as = key): Promise<{ prefix: string; count: number; sha256: string }[]> {
  const res = await s.request('GET', path, { key: as });
  assert.equal(res.status, 200, res.text);
  assert.equal(typeof res.body.meta.request_id, 'string');
  return res.body.data;
}

describe('includes on lists', () => {
  let sales: Row[] = [];
  let customerA = '';

  before(async () => {
    const a = await send('POST', '/v1/customers', { full_name: 'Ana', phone: '+55 81 3333-0001' });
    const b = await send('POST', '/v1/customers', { full_name: 'Bia', phone: '+55 81 3333-0002' });
    customerA = a.body.data.id;
    sales = [];
    for (let i = 0; i < 7; i++) {
      const items = Array.from({ length: (i % 3) + 1 }, (_, j) => item({ quantity: j + 1, notes: `s${i}i${j}` }));
      const res = await send('POST', '/v1/sales', { customer_id: i % 2 === 0 ? customerA : b.body.data.id, items });
      assert.equal(res.status, 201, res.text);
      sales.push(res.body.data);
    }
    // A sale with no item: its list record still carries `items: []`.
    await insertRows(s.db, 'transactions', tenant, [{ status: 'pending' }]);
  });

  test('every page carries what GET by id includes, across cursors, with fields and filters', async () => {
    for (const query of [
      'include=items,status_history&limit=2',
      'include=items&limit=3&fields=total_amount&sort=total_amount',
      `include=items,status_history&limit=1&filter[customer_id][eq]=${customerA}&fields=customer_id`,
    ]) {
      const { items: records, pages } = await readAll(get, `/v1/sales?${query}`);
      assert.ok(pages > 1, query);
      const expected = query.includes('filter') ? sales.filter((x) => x.customer_id === customerA).length : sales.length + 1;
      assert.equal(records.length, expected, query);
      for (const record of records) {
        const one = await get(`/v1/sales/${record.id}?include=items,status_history`);
        assert.equal(one.status, 200);
        assert.deepEqual(record.items, one.body.data.items, query);
        if (query.includes('status_history')) assert.deepEqual(record.status_history, one.body.data.status_history, query);
        else assert.equal('status_history' in record, false);
        if (query.includes('fields=')) {
          const asked = query.match(/fields=([a-z_]+)/)?.[1] as string;
          assert.deepEqual(Object.keys(record).sort(), ['id', asked, ...query.match(/include=([a-z_,]+)/)![1]!.split(',')].sort());
        }
      }
    }
  });

  test('the recurrence of expenses comes on the list too, null when there is none', async () => {
    const [recurring] = await insertRows(s.db, 'recurring_expenses', tenant, [{}]);
    const [withIt, without] = await insertRows(s.db, 'expenses', tenant, [
      { recurring_expense_id: recurring!.id, expense_number: 'E-10' },
      { expense_number: 'E-11' },
    ]);
    const res = await get('/v1/expenses?include=recurring&fields=description');
    assert.equal(res.status, 200, res.text);
    const byId = new Map(res.body.data.map((r: Row) => [r.id, r]));
    const one = await get(`/v1/expenses/${withIt!.id}?include=recurring`);
    assert.deepEqual((byId.get(withIt!.id) as Row).recurring, one.body.data.recurring);
    assert.equal((byId.get(withIt!.id) as Row).recurring.id, recurring!.id);
    assert.equal((byId.get(without!.id) as Row).recurring, null);
    // The foreign key read for the include is not answered when `fields` leaves it out.
    assert.deepEqual(Object.keys(byId.get(withIt!.id) as Row).sort(), ['description', 'id', 'recurring']);
  });

  test('a page reads each include with one statement, and counts as one read', async () => {
    const before = recorder.nodes.length;
    recorder.on = true;
    const first = await get('/v1/sales?include=items,status_history&limit=5');
    recorder.on = false;
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 5);
    const texts = recorder.texts(before);
    assert.equal(texts.filter((t) => /from "transaction_items"/.test(t)).length, 1, texts.join('\n'));
    assert.equal(texts.filter((t) => /from "transaction_status_history"/.test(t)).length, 1, texts.join('\n'));
    assert.equal(await readsCostBy(() => get('/v1/sales?include=items,status_history&limit=5&count=exact')), 1);
  });
});

describe('updated_at and id ranges on every list', () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 4, 1, 12, minute, 0, 123)).toISOString();
  // Their order as UUIDs is the order of their text: 0… < 7f… < 80… < ff….
  const IDS = [
    '00000000-0000-4000-8000-000000000001',
    '7fffffff-ffff-4fff-bfff-ffffffffffff',
    '80000000-0000-4000-8000-000000000000',
    'ffffffff-0000-4000-8000-000000000000',
  ];

  test('every list resource takes both ranges, and its digest matches a copy', async () => {
    assert.deepEqual(Object.keys(TABLES).sort(), RESOURCES.map((d) => d.name).sort());
    for (const d of RESOURCES) {
      const own = await s.createAccountWithKey(UNLIMITED);
      const scope = { accountId: own.account.id, mode: 'live' as const };
      const req = (path: string) => s.request('GET', path, { key: own.key });
      await insertRows(
        s.db,
        TABLES[d.name] as string,
        scope,
        IDS.map((id, i) => ({ id, updated_at: at(i), created_at: at(0) })),
      );
      const idsOf = async (query: string) => {
        const res = await req(`/v1/${d.name}?fields=updated_at&sort=created_at&${query.includes('limit=') ? '' : 'limit=100&'}${query}`);
        assert.equal(res.status, 200, `${d.name} ${query}: ${res.text}`);
        return res.body.data.map((r: Row) => r.id).sort();
      };
      assert.deepEqual(await idsOf(`filter[updated_at][gt]=${at(0)}&filter[updated_at][lte]=${at(2)}`), [IDS[1], IDS[2]], d.name);
      assert.deepEqual(await idsOf(`filter[updated_at][gte]=${at(1)}&filter[updated_at][lt]=${at(3)}`), [IDS[1], IDS[2]], d.name);
      assert.deepEqual(await idsOf(`filter[id][gt]=${IDS[0]}&filter[id][lte]=${IDS[2]}`), [IDS[1], IDS[2]], d.name);
      assert.deepEqual(await idsOf(`filter[id][gte]=${IDS[1]?.toUpperCase()}&filter[id][lt]=${IDS[3]}`), [IDS[1], IDS[2]], d.name);
      // A walk by id: each page starts past the last id seen.
      const walked: string[] = [];
      for (let last = '', n = 0; n < 10; n++) {
        const page = await idsOf(`limit=1${last ? `&filter[id][gt]=${last}` : ''}`);
        const next = page.filter((id: string) => !walked.includes(id)).sort()[0];
        if (!next) break;
        walked.push(next);
        last = next;
      }
      assert.equal(walked.length, IDS.length, d.name);

      const copy = (await readAll(req, `/v1/${d.name}?fields=updated_at&limit=100`)).items;
      assert.deepEqual(await digest(`/v1/${d.name}/digest`, own.key), clientDigest(copy), d.name);
      assert.deepEqual(await digest(`/v1/${d.name}/digest?prefix=7f`, own.key), clientDigest(copy, '7f'), d.name);
      assert.deepEqual(
        await digest(`/v1/${d.name}/digest?filter[id][gte]=${IDS[1]}`, own.key),
        clientDigest(
          copy.filter((r) => String(r.id) >= (IDS[1] as string)),
          '',
        ),
        d.name,
      );
    }
  });

  test('a range refuses a value of the wrong kind', async () => {
    for (const query of ['filter[id][gt]=nope', 'filter[updated_at][lt]=yesterday']) {
      const res = await get(`/v1/suppliers?${query}`);
      assert.equal(res.status, 422, query);
      assert.match(res.body.detail, /^filter_value_invalid:/);
    }
  });
});

describe('counts', () => {
  let own: { key: string; scope: { accountId: string; mode: 'live' } };
  const req = (path: string) => s.request('GET', path, { key: own.key });

  before(async () => {
    const created = await s.createAccountWithKey(UNLIMITED);
    own = { key: created.key, scope: { accountId: created.account.id, mode: 'live' } };
    await insertRows(
      s.db,
      'customers',
      own.scope,
      Array.from({ length: 30 }, (_, i) => ({ full_name: `c${i}`, address_city: i % 3 === 0 ? 'Recife' : 'Natal' })),
    );
  });

  test('exact and estimated counts follow the filters, not the cursor', async () => {
    for (const kind of ['exact', 'estimated']) {
      const first = await req(`/v1/customers?count=${kind}&limit=4&filter[address_city][eq]=Recife`);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.pagination.total_count, 10);
      assert.equal(first.body.pagination.total_count_kind, 'exact');
      const next = await req(
        `/v1/customers?count=${kind}&limit=4&filter[address_city][eq]=Recife&cursor=${first.body.pagination.next_cursor}`,
      );
      assert.equal(next.body.pagination.total_count, 10);
      const all = await req(`/v1/customers?count=${kind}&limit=1`);
      assert.equal(all.body.pagination.total_count, 30);
    }
  });

  test('without count nothing is counted or answered', async () => {
    const res = await req('/v1/customers?limit=2');
    assert.deepEqual(Object.keys(res.body.pagination).sort(), ['has_more', 'limit', 'next_cursor']);
  });

  test('an unknown count is a 422', async () => {
    for (const query of ['count=all', 'count=exact&count=exact']) {
      const res = await req(`/v1/customers?${query}`);
      assert.equal(res.status, 422, query);
      assert.equal(res.body.detail, 'invalid_count');
    }
  });

  test('estimated takes the planner past 10 000 records, exact counts them', async () => {
    const created = await s.createAccountWithKey(UNLIMITED);
    const scope = { accountId: created.account.id, mode: 'live' as const };
    await insertRows(
      s.db,
      'customers',
      scope,
      Array.from({ length: 10_050 }, (_, i) => ({ full_name: `c${i}` })),
    );
    const big = (path: string) => s.request('GET', path, { key: created.key });
    const exact = await big('/v1/customers?count=exact&limit=1');
    assert.equal(exact.body.pagination.total_count, 10_050);
    assert.equal(exact.body.pagination.total_count_kind, 'exact');
    const estimated = await big('/v1/customers?count=estimated&limit=1');
    assert.equal(estimated.status, 200, estimated.text);
    assert.equal(estimated.body.pagination.total_count_kind, 'estimated');
    assert.ok(estimated.body.pagination.total_count >= 10_000, String(estimated.body.pagination.total_count));
    // Under the threshold (a filter), estimated is exact.
    const few = await big('/v1/customers?count=estimated&limit=1&filter[full_name][eq]=c7');
    assert.deepEqual([few.body.pagination.total_count, few.body.pagination.total_count_kind], [1, 'exact']);
  });
});

describe('digests', () => {
  let own: { key: string };
  const req = (method: string, path: string, body?: unknown) => s.request(method, path, { key: own.key, body });
  const digestOf = (path: string) => digest(path, own.key);
  const copyOf = async () => (await readAll((p) => req('GET', p), '/v1/customers?fields=updated_at&limit=100')).items;

  before(async () => {
    own = await s.createAccountWithKey(UNLIMITED);
    for (let i = 0; i < 60; i++) {
      const res = await req('POST', '/v1/customers', { full_name: `cliente ${i}`, phone: `+55 81 3333-${1000 + i}` });
      assert.equal(res.status, 201, res.text);
    }
  });

  test('every level matches what a client computes over its copy, after writes', async () => {
    const copy = await copyOf();
    const top = await digestOf(`/v1/customers/digest`);
    assert.deepEqual(top, clientDigest(copy));
    assert.equal(
      top.reduce((n, e) => n + e.count, 0),
      60,
    );
    for (const entry of top.slice(0, 3)) {
      const res = await req('GET', `/v1/customers/digest?prefix=${entry.prefix}`);
      assert.equal(res.body.meta.prefix, entry.prefix);
      assert.deepEqual(res.body.data, clientDigest(copy, entry.prefix));
      assert.equal(
        res.body.data.reduce((n: number, e: Row) => n + e.count, 0),
        entry.count,
      );
    }
    // With the list's filters.
    const some = (
      await readAll((p) => req('GET', p), `/v1/customers?fields=updated_at&filter[full_name][ilike]=${encodeURIComponent('cliente 1%')}`)
    ).items;
    assert.equal(some.length, 11);
    assert.deepEqual(
      await digestOf(`/v1/customers/digest?filter[full_name][ilike]=${encodeURIComponent('cliente 1%')}`),
      clientDigest(some),
    );
  });

  test('after one PATCH exactly one entry changes at every level, down to the record', async () => {
    const before = await copyOf();
    const target = before[17] as Row;
    const levels = Array.from({ length: 8 }, (_, n) => target.id.slice(0, n) as string);
    const was = await Promise.all(levels.map((p) => digestOf(`/v1/customers/digest?prefix=${p}`)));
    const patched = await req('PATCH', `/v1/customers/${target.id}`, { notes: 'changed behind the mirror' });
    assert.equal(patched.status, 200, patched.text);
    const now = await Promise.all(levels.map((p) => digestOf(`/v1/customers/digest?prefix=${p}`)));
    for (const [n, prefix] of levels.entries()) {
      const changed = now[n]!.filter((e, i) => JSON.stringify(e) !== JSON.stringify(was[n]![i]));
      assert.equal(now[n]!.length, was[n]!.length, prefix);
      assert.deepEqual(
        changed.map((e) => e.prefix),
        [target.id.slice(0, n + 1)],
        `level "${prefix}"`,
      );
    }
    // The copy brought up to date agrees again.
    const after = await copyOf();
    assert.deepEqual(await digestOf('/v1/customers/digest'), clientDigest(after));
  });

  test('a client finds the changed records by descending where entries differ', async () => {
    const mirror = new Map((await copyOf()).map((r) => [r.id as string, r]));
    const changed = [...mirror.keys()].filter((_, i) => i % 20 === 3);
    for (const id of changed) assert.equal((await req('PATCH', `/v1/customers/${id}`, { phone: '+55 81 9999-0000' })).status, 200);
    const found: string[] = [];
    const pending = [''];
    let digests = 0;
    while (pending.length > 0 && digests < 500) {
      const prefix = pending.shift() as string;
      const ours = new Map(clientDigest([...mirror.values()], prefix).map((e) => [e.prefix, e]));
      const res = await req('GET', `/v1/customers/digest?prefix=${prefix}`);
      digests++;
      for (const entry of res.body.data as Row[]) {
        if (JSON.stringify(ours.get(entry.prefix)) === JSON.stringify(entry)) continue;
        // Few enough records: read them (a list by id range) instead of descending further.
        if (entry.count <= 2 || entry.prefix.length === 8) {
          const low = entry.prefix.padEnd(8, '0');
          const page = (
            await readAll(
              (p) => req('GET', p),
              `/v1/customers?fields=updated_at&filter[id][gte]=${low}-0000-0000-0000-000000000000&filter[id][lte]=${entry.prefix.padEnd(8, 'f')}-ffff-ffff-ffff-ffffffffffff`,
            )
          ).items;
          for (const r of page) if (mirror.get(String(r.id))?.updated_at !== r.updated_at) found.push(String(r.id));
        } else pending.push(entry.prefix);
      }
    }
    assert.deepEqual(found.sort(), changed.sort());
  });

  test('the route is not taken for an id; an invalid prefix is a 422; a digest is one read', async () => {
    for (const prefix of ['G', 'AB', '12345678', 'x', '-1']) {
      const res = await req('GET', `/v1/customers/digest?prefix=${prefix}`);
      assert.equal(res.status, 422, prefix);
      assert.match(res.body.type, /\/validation$/);
      assert.equal(res.body.detail, 'invalid_prefix');
    }
    const repeated = await req('GET', '/v1/customers/digest?prefix=a&prefix=b');
    assert.equal(repeated.status, 422);
    const bad = await req('GET', '/v1/customers/digest?filter[nope][eq]=1');
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail, 'filter_field_not_allowed:nope');
    const empty = await req('GET', '/v1/customers/digest?prefix=&filter[full_name][eq]=nobody');
    assert.deepEqual(empty.body, { data: [], meta: { request_id: empty.body.meta.request_id, prefix: '' } });
    assert.equal(await readsCostBy(() => get('/v1/customers/digest?prefix=0')), 1);
  });
});
