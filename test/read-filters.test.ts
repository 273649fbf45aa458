// The list query language over HTTP: every operator on representative fields of every kind,
// expected results computed here from the inserted rows, ANDed filters, and every 422 cause
// with its DECISIONS B.9 `detail`. A query string never produces a 500.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { UNLIMITED, insertRows, readAll } from './helpers/read-data.ts';

type Row = Record<string, any>;

let s: TestServer;
let key: string;
let sales: Row[];
let expenses: Row[];
const customers = [randomUUID(), randomUUID(), randomUUID()];

const get = (path: string) => s.request('GET', path, { key });
const ids = (rows: Row[]) => rows.map((r) => r.id as string).sort();
// Both drivers read timestamptz as its ISO 8601 string.
const ms = (v: unknown) => (typeof v === 'string' ? Date.parse(v) : null);

async function idsOf(path: string): Promise<string[]> {
  const sep = path.includes('?') ? '&' : '?';
  return ids((await readAll(get, `${path}${sep}limit=100`)).items);
}

before(async () => {
  s = await startTestServer();
  const created = await s.createAccountWithKey(UNLIMITED);
  key = created.key;
  const tenant = { accountId: created.account.id, mode: 'live' as const };
  const statuses = ['pending', 'completed', 'cancelled', null];
  const methods = ['pix', 'cash', 'credit_card', null];
  const payment = ['paid', 'PAID', 'Pago', 'unpaid', 'a_b', 'axb', null];
  const totals = [10, 20.5, 20.5, 99.99, null, 0, 1000, 59.97];
  const base = Date.UTC(2026, 2, 1, 10, 0, 0);
  const rows = Array.from({ length: 40 }, (_, i) => ({
    transaction_type: i % 5 === 0 ? 'order' : 'sale',
    transaction_number: String(i + 1),
    status: statuses[i % 4],
    payment_method: methods[(i >> 1) % 4],
    payment_status: payment[i % 7],
    total_amount: totals[i % 8],
    customer_id: i % 4 === 3 ? null : customers[i % 3],
    is_active: i % 6 === 5 ? null : i % 3 !== 0,
    // Some sale dates carry microseconds; some are null; two share one millisecond.
    sale_date: i % 7 === 6 ? null : i % 5 === 1 ? `2026-03-0${1 + (i % 3)}T10:00:00.123456Z` : new Date(base + i * 3_600_000),
    created_at: new Date(base + i * 1000),
  }));
  sales = await insertRows(s.db, 'transactions', tenant, rows);
  // Quotes share every value but must never appear.
  await insertRows(
    s.db,
    'transactions',
    tenant,
    rows.slice(0, 10).map((r) => ({ ...r, transaction_type: 'quote' })),
  );
  expenses = await insertRows(
    s.db,
    'expenses',
    tenant,
    Array.from({ length: 12 }, (_, i) => ({
      expense_number: `E-${i}`,
      description: i % 2 ? 'Aluguel da loja' : 'energia',
      due_date: i % 4 === 3 ? null : `2026-0${1 + (i % 3)}-1${i % 10}`,
      is_recurring: i % 2 === 0,
      supplier_id: i % 3 === 0 ? null : customers[i % 2],
    })),
  );
});
after(async () => s?.close());

describe('every operator returns exactly the matching records', () => {
  const cases: [string, (r: Row) => boolean][] = [
    // text
    ['filter[status][eq]=completed', (r) => r.status === 'completed'],
    ['filter[status][neq]=completed', (r) => r.status !== 'completed'],
    ['filter[status][gt]=completed', (r) => r.status !== null && r.status > 'completed'],
    ['filter[status][gte]=completed', (r) => r.status !== null && r.status >= 'completed'],
    ['filter[status][lt]=completed', (r) => r.status !== null && r.status < 'completed'],
    ['filter[status][lte]=completed', (r) => r.status !== null && r.status <= 'completed'],
    ['filter[status][in]=completed,pending', (r) => ['completed', 'pending'].includes(r.status)],
    ['filter[status][nin]=completed,pending', (r) => !['completed', 'pending'].includes(r.status)],
    ['filter[status][is_null]=true', (r) => r.status === null],
    ['filter[status][is_null]=false', (r) => r.status !== null],
    ['filter[payment_status][ilike]=pa%25', (r) => /^pa/i.test(r.payment_status ?? '')],
    ['filter[payment_status][ilike]=%25AID', (r) => /aid$/i.test(r.payment_status ?? '')],
    ['filter[payment_status][ilike]=PAID', (r) => /^paid$/i.test(r.payment_status ?? '')],
    ['filter[payment_status][ilike]=a_b', (r) => r.payment_status === 'a_b'],
    ['filter[transaction_type][eq]=order', (r) => r.transaction_type === 'order'],
    ['filter[transaction_type][eq]=quote', () => false],
    // number
    ['filter[total_amount][eq]=20.5', (r) => r.total_amount === 20.5],
    ['filter[total_amount][eq]=20.50', (r) => r.total_amount === 20.5],
    ['filter[total_amount][neq]=20.5', (r) => r.total_amount !== 20.5],
    ['filter[total_amount][gt]=20.5', (r) => r.total_amount !== null && r.total_amount > 20.5],
    ['filter[total_amount][gte]=20.5', (r) => r.total_amount !== null && r.total_amount >= 20.5],
    ['filter[total_amount][lt]=59.97', (r) => r.total_amount !== null && r.total_amount < 59.97],
    ['filter[total_amount][lte]=59.97', (r) => r.total_amount !== null && r.total_amount <= 59.97],
    ['filter[total_amount][in]=10,99.99,0', (r) => [10, 99.99, 0].includes(r.total_amount)],
    ['filter[total_amount][nin]=10,99.99,0', (r) => ![10, 99.99, 0].includes(r.total_amount)],
    ['filter[total_amount][is_null]=true', (r) => r.total_amount === null],
    ['filter[total_amount][gt]=-1', (r) => r.total_amount !== null],
    // timestamp (a value means its whole millisecond, as responses show it)
    ['filter[sale_date][eq]=2026-03-02T10:00:00.123Z', (r) => ms(r.sale_date) === Date.parse('2026-03-02T10:00:00.123Z')],
    ['filter[sale_date][neq]=2026-03-02T10:00:00.123Z', (r) => ms(r.sale_date) !== Date.parse('2026-03-02T10:00:00.123Z')],
    [
      'filter[sale_date][gt]=2026-03-02T10:00:00.123Z',
      (r) => r.sale_date !== null && ms(r.sale_date)! > Date.parse('2026-03-02T10:00:00.123Z'),
    ],
    [
      'filter[sale_date][gte]=2026-03-02T10:00:00.123Z',
      (r) => r.sale_date !== null && ms(r.sale_date)! >= Date.parse('2026-03-02T10:00:00.123Z'),
    ],
    [
      'filter[sale_date][lt]=2026-03-02T10:00:00.123Z',
      (r) => r.sale_date !== null && ms(r.sale_date)! < Date.parse('2026-03-02T10:00:00.123Z'),
    ],
    [
      'filter[sale_date][lte]=2026-03-02T10:00:00.123Z',
      (r) => r.sale_date !== null && ms(r.sale_date)! <= Date.parse('2026-03-02T10:00:00.123Z'),
    ],
    ['filter[sale_date][gte]=2026-03-02', (r) => r.sale_date !== null && ms(r.sale_date)! >= Date.parse('2026-03-02T00:00:00Z')],
    [
      'filter[sale_date][lt]=2026-03-01T12:00:00-03:00',
      (r) => r.sale_date !== null && ms(r.sale_date)! < Date.parse('2026-03-01T15:00:00Z'),
    ],
    [
      'filter[sale_date][in]=2026-03-01T10:00:00.123Z,2026-03-01T12:00:00Z',
      (r) => [Date.parse('2026-03-01T10:00:00.123Z'), Date.parse('2026-03-01T12:00:00Z')].includes(ms(r.sale_date)!),
    ],
    [
      'filter[sale_date][nin]=2026-03-01T10:00:00.123Z,2026-03-01T12:00:00Z',
      (r) => ![Date.parse('2026-03-01T10:00:00.123Z'), Date.parse('2026-03-01T12:00:00Z')].includes(ms(r.sale_date)!),
    ],
    ['filter[sale_date][is_null]=true', (r) => r.sale_date === null],
    ['filter[created_at][gte]=2026-03-01T10:00:10.000Z', (r) => ms(r.created_at)! >= Date.UTC(2026, 2, 1, 10, 0, 10)],
    // uuid
    [`filter[customer_id][eq]=${customers[0]}`, (r) => r.customer_id === customers[0]],
    [`filter[customer_id][eq]=${customers[0]!.toUpperCase()}`, (r) => r.customer_id === customers[0]],
    [`filter[customer_id][neq]=${customers[0]}`, (r) => r.customer_id !== customers[0]],
    [`filter[customer_id][in]=${customers[0]},${customers[1]}`, (r) => [customers[0], customers[1]].includes(r.customer_id)],
    [`filter[customer_id][nin]=${customers[0]},${customers[1]}`, (r) => ![customers[0], customers[1]].includes(r.customer_id)],
    ['filter[customer_id][is_null]=true', (r) => r.customer_id === null],
    // boolean
    ['filter[is_active][eq]=true', (r) => r.is_active === true],
    ['filter[is_active][eq]=false', (r) => r.is_active === false],
    ['filter[is_active][neq]=true', (r) => r.is_active !== true],
    ['filter[is_active][is_null]=true', (r) => r.is_active === null],
    ['filter[is_active][in]=true,false', (r) => r.is_active !== null],
    // ANDed filters
    ['filter[status][eq]=completed&filter[is_active][eq]=true', (r) => r.status === 'completed' && r.is_active === true],
    [
      'filter[total_amount][gte]=10&filter[total_amount][lt]=100&filter[payment_method][in]=pix,cash',
      (r) => r.total_amount !== null && r.total_amount >= 10 && r.total_amount < 100 && ['pix', 'cash'].includes(r.payment_method),
    ],
  ];
  for (const [query, predicate] of cases) {
    test(`sales?${query}`, async () => {
      const expected = ids(sales.filter(predicate));
      assert.deepEqual(await idsOf(`/v1/sales?${query}`), expected);
    });
  }

  const expenseCases: [string, (r: Row) => boolean][] = [
    ['filter[due_date][eq]=2026-02-11', (r) => r.due_date === '2026-02-11'],
    ['filter[due_date][gt]=2026-02-11', (r) => r.due_date !== null && r.due_date > '2026-02-11'],
    ['filter[due_date][lte]=2026-02-11', (r) => r.due_date !== null && r.due_date <= '2026-02-11'],
    ['filter[due_date][in]=2026-01-10,2026-03-12', (r) => ['2026-01-10', '2026-03-12'].includes(r.due_date)],
    ['filter[due_date][is_null]=false', (r) => r.due_date !== null],
    ['filter[description][ilike]=%25LOJA', (r) => r.description.toLowerCase().endsWith('loja')],
    ['filter[is_recurring][eq]=false', (r) => r.is_recurring === false],
    [`filter[supplier_id][eq]=${customers[1]}`, (r) => r.supplier_id === customers[1]],
    ['filter[expense_number][in]=E-1,E-2,E-99', (r) => ['E-1', 'E-2'].includes(r.expense_number)],
  ];
  for (const [query, predicate] of expenseCases) {
    test(`expenses?${query}`, async () => {
      const expected = ids(expenses.filter(predicate));
      assert.ok(expected.length > 0 || query.includes('E-99'));
      assert.deepEqual(await idsOf(`/v1/expenses?${query}`), expected);
    });
  }

  test('deals accept their restricted operators', async () => {
    const created = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: created.account.id, mode: 'live' as const };
    const stage = randomUUID();
    const deals = await insertRows(s.db, 'deals', tenant, [
      { status: 'open', stage_id: stage, customer_id: customers[0] },
      { status: 'won', stage_id: stage },
      { status: 'lost' },
    ]);
    const dealIds = async (q: string) => ids((await s.request('GET', `/v1/deals?${q}`, { key: created.key })).body.data);
    assert.deepEqual(await dealIds('filter[status][eq]=won'), ids([deals[1]!]));
    assert.deepEqual(await dealIds('filter[status][in]=won,lost'), ids([deals[1]!, deals[2]!]));
    assert.deepEqual(await dealIds(`filter[stage_id][eq]=${stage}`), ids([deals[0]!, deals[1]!]));
    assert.deepEqual(await dealIds(`filter[customer_id][eq]=${customers[0]}`), ids([deals[0]!]));
  });
});

describe('every refusal is a 422 validation naming the parameter', () => {
  const cursorOf = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const refusals: [string, string][] = [
    ['/v1/sales?filter[notes][eq]=x', 'filter_field_not_allowed:notes'],
    ['/v1/sales?filter[team_id][eq]=x', 'filter_field_not_allowed:team_id'],
    ['/v1/sales?filter[items][eq]=x', 'filter_field_not_allowed:items'],
    ['/v1/inventory?filter[current_stock][lt]=5', 'filter_field_not_allowed:current_stock'],
    ['/v1/inventory?filter[min_stock_alert][gt]=1', 'filter_field_not_allowed:min_stock_alert'],
    ['/v1/deals?filter[origin_channel][eq]=x', 'filter_field_not_allowed:origin_channel'],
    ['/v1/customers?filter[birth_date][eq]=2020-01-01', 'filter_field_not_allowed:birth_date'],
    ['/v1/sales?filter[status][like]=x', 'filter_operator_not_allowed:status:like'],
    ['/v1/sales?filter[total_amount][ilike]=1%25', 'filter_operator_not_allowed:total_amount:ilike'],
    ['/v1/sales?filter[is_active][ilike]=t', 'filter_operator_not_allowed:is_active:ilike'],
    ['/v1/deals?filter[status][neq]=won', 'filter_operator_not_allowed:status:neq'],
    ['/v1/deals?filter[status][ilike]=w%25', 'filter_operator_not_allowed:status:ilike'],
    [`/v1/deals?filter[stage_id][in]=${randomUUID()}`, 'filter_operator_not_allowed:stage_id:in'],
    ['/v1/deals?filter[customer_id][is_null]=true', 'filter_operator_not_allowed:customer_id:is_null'],
    ['/v1/sales?filter[status]=x', 'filter_operator_not_allowed:status:'],
    ['/v1/sales?filter[status][]=x', 'filter_operator_not_allowed:status:'],
    ['/v1/sales?filter[status][eq][x]=1', 'filter_operator_not_allowed:status:eq[x]'],
    ['/v1/sales?filter=1', 'filter_field_not_allowed:filter'],
    ['/v1/sales?filter[][eq]=1', 'filter_field_not_allowed:'],
    ['/v1/sales?filter[total_amount][gt]=abc', 'filter_value_invalid:total_amount'],
    ['/v1/sales?filter[total_amount][gt]=1e3', 'filter_value_invalid:total_amount'],
    ['/v1/sales?filter[total_amount][eq]=', 'filter_value_invalid:total_amount'],
    ['/v1/sales?filter[total_amount][in]=1,x', 'filter_value_invalid:total_amount'],
    ['/v1/sales?filter[total_amount][in]=', 'filter_value_invalid:total_amount'],
    ['/v1/sales?filter[customer_id][eq]=123', 'filter_value_invalid:customer_id'],
    ['/v1/sales?filter[sale_date][gt]=2026-13-01', 'filter_value_invalid:sale_date'],
    ['/v1/sales?filter[sale_date][gt]=2026-02-30T10:00:00Z', 'filter_value_invalid:sale_date'],
    ['/v1/sales?filter[sale_date][gt]=2026-01-01T25:00:00Z', 'filter_value_invalid:sale_date'],
    ['/v1/sales?filter[sale_date][gt]=yesterday', 'filter_value_invalid:sale_date'],
    ['/v1/sales?filter[is_active][eq]=yes', 'filter_value_invalid:is_active'],
    ['/v1/sales?filter[is_active][eq]=1', 'filter_value_invalid:is_active'],
    ['/v1/sales?filter[status][is_null]=maybe', 'filter_value_invalid:status'],
    ['/v1/sales?filter[status][eq]=a%00b', 'filter_value_invalid:status'],
    ['/v1/sales?filter[status][eq]=a&filter[status][eq]=b', 'filter_value_invalid:status'],
    [`/v1/sales?filter[status][in]=${Array.from({ length: 101 }, (_, i) => i).join(',')}`, 'filter_value_invalid:status'],
    ['/v1/expenses?filter[due_date][eq]=2026-02-30', 'filter_value_invalid:due_date'],
    ['/v1/expenses?filter[due_date][eq]=2026-2-3', 'filter_value_invalid:due_date'],
    ['/v1/sales?sort=notes', 'sort_field_not_allowed:notes'],
    ['/v1/sales?sort=-notes', 'sort_field_not_allowed:notes'],
    ['/v1/sales?sort=status', 'sort_field_not_allowed:status'],
    ['/v1/sales?sort=-', 'sort_field_not_allowed:-'],
    ['/v1/sales?sort=created_at,total_amount', 'sort_field_not_allowed:created_at,total_amount'],
    ['/v1/sales?sort=created_at&sort=total_amount', 'sort_field_not_allowed:created_at,total_amount'],
    ['/v1/customers?sort=name', 'sort_field_not_allowed:name'],
    ['/v1/deals?sort=status', 'sort_field_not_allowed:status'],
    ['/v1/sales?fields=status,internal_notes', 'fields_not_allowed:internal_notes'],
    ['/v1/sales?fields=items', 'fields_not_allowed:items'],
    ['/v1/products?fields=deleted_at', 'fields_not_allowed:deleted_at'],
    ['/v1/sales?limit=abc', 'invalid_limit'],
    ['/v1/sales?limit=1.5', 'invalid_limit'],
    ['/v1/sales?limit=', 'invalid_limit'],
    ['/v1/sales?limit=10&limit=20', 'invalid_limit'],
    ['/v1/sales?cursor=not-a-cursor!', 'invalid_cursor'],
    ['/v1/sales?cursor=abc', 'invalid_cursor'],
    [`/v1/sales?cursor=${Buffer.from('[1,2]').toString('base64url')}`, 'invalid_cursor'],
    [`/v1/sales?cursor=${cursorOf({ sort: 'created_at', value: '2026-03-01T10:00:00.000000Z', id: randomUUID() })}`, 'invalid_cursor'],
    [`/v1/sales?cursor=${cursorOf({ sort: '-created_at', value: '2026-03-01T10:00:00.000000Z', id: 'x' })}`, 'invalid_cursor'],
    [`/v1/sales?cursor=${cursorOf({ sort: '-created_at', value: 'yesterday', id: randomUUID() })}`, 'invalid_cursor'],
    [`/v1/sales?cursor=${cursorOf({ sort: '-created_at', value: null, id: randomUUID() })}`, 'invalid_cursor'],
    [`/v1/sales?sort=total_amount&cursor=${cursorOf({ sort: 'total_amount', value: '10', id: randomUUID() })}`, 'invalid_cursor'],
    ['/v1/sales?cursor=a&cursor=b', 'invalid_cursor'],
  ];
  for (const [path, detail] of refusals) {
    test(`${path} → ${detail}`, async () => {
      const res = await get(path);
      assert.equal(res.status, 422, res.text);
      assert.ok(res.body.type.endsWith('/validation'));
      assert.equal(res.body.detail, detail);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    });
  }
});

describe('limits and tolerated parameters', () => {
  test('limit is clamped to 1..100 and reported as the effective page size', async () => {
    for (const [limit, effective] of [
      ['0', 1],
      ['-5', 1],
      ['1', 1],
      ['100', 100],
      ['101', 100],
      ['99999999999999999999999', 100],
      ['%2B7', 7],
    ] as const) {
      const res = await get(`/v1/sales?limit=${limit}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.pagination.limit, effective);
      assert.equal(res.body.data.length, Math.min(effective, sales.length));
    }
    assert.equal((await get('/v1/sales')).body.pagination.limit, 20);
  });

  test('unknown parameters that are not filters are ignored, and so are list parameters on GET by id', async () => {
    const res = await get('/v1/sales?utm_source=x&page=3');
    assert.equal(res.status, 200);
    const one = await get(`/v1/sales/${sales[0]!.id}?limit=abc&sort=nope&filter[x][y]=z`);
    assert.equal(one.status, 200);
  });

  test('hostile query strings answer 200 or 422, never 500', async () => {
    const hostile = [
      `filter[total_amount][gt]=1${'0'.repeat(60)}`,
      'filter[total_amount][gt]=NaN',
      'filter[total_amount][gt]=Infinity',
      'filter[created_at][eq]=99999-01-01',
      'filter[created_at][eq]=0000-01-01',
      'filter[created_at][eq]=0001-01-01T00:00:00Z',
      'filter[sale_date][eq]=2026-01-01T10:00:00%2B99:99',
      `filter[status][eq]=${'x'.repeat(5000)}`,
      'filter[status][in]=,,,',
      'filter[status][ilike]=%5C',
      'filter[status][eq]=%27%3B%20DROP%20TABLE%20transactions%3B--',
      'sort=%00',
      'fields=%00',
      'cursor=%00',
      'include=%00',
      'filter[%5B][eq]=1',
      'filter[status][eq]=%E0%A4%A',
      'limit=%00',
      'fields=id,,,',
      `cursor=${Buffer.from(JSON.stringify({ sort: '-created_at', value: '99999-01-01T00:00:00.000000Z', id: randomUUID() })).toString('base64url')}`,
      `cursor=${'A'.repeat(5000)}`,
    ];
    for (const q of hostile) {
      const res = await get(`/v1/sales?${q}`);
      assert.ok(res.status === 200 || res.status === 422, `${q} → ${res.status} ${res.text.slice(0, 200)}`);
    }
  });
});
