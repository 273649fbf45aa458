// Every 422 cause of SPEC part 7 and DECISIONS B.7–B.8 over HTTP: `type` validation, the refused
// field's path in errors[].field and its stable errors[].code, one item per field, nothing written.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { assertFieldError, item, writer } from './helpers/write-fixtures.ts';

type Case = { name: string; path: string; body: unknown; field: string; code: string };

const customer = (extra: Record<string, unknown>) => ({ full_name: 'Ana', email: 'ana@example.com', ...extra });
const sale = (extra: Record<string, unknown>) => ({ items: [item()], ...extra });
const saleItem = (extra: Record<string, unknown>) => ({ items: [item(), item(extra)] });
const supplier = (extra: Record<string, unknown>) => ({ name: 'Fornecedor', ...extra });
const expense = (extra: Record<string, unknown>) => ({
  expense_type: 'fixed',
  description: 'Aluguel',
  original_amount: 100,
  final_amount: 100,
  ...extra,
});

const CASES: Case[] = [
  // Sales and their items
  { name: 'sale without items', path: '/v1/sales', body: {}, field: 'items', code: 'required' },
  { name: 'sale with empty items', path: '/v1/sales', body: { items: [] }, field: 'items', code: 'too_short' },
  {
    name: 'sale with 201 items',
    path: '/v1/sales',
    body: { items: Array.from({ length: 201 }, () => item()) },
    field: 'items',
    code: 'too_long',
  },
  { name: 'items not an array', path: '/v1/sales', body: { items: 'x' }, field: 'items', code: 'invalid_type' },
  { name: 'quantity 0', path: '/v1/sales', body: saleItem({ quantity: 0 }), field: 'items[1].quantity', code: 'too_small' },
  {
    name: 'quantity that rounds to 0 (3 places)',
    path: '/v1/sales',
    body: saleItem({ quantity: 0.0004 }),
    field: 'items[1].quantity',
    code: 'too_small',
  },
  { name: 'negative quantity', path: '/v1/sales', body: saleItem({ quantity: -2 }), field: 'items[1].quantity', code: 'too_small' },
  {
    name: 'quantity as a string (no coercion)',
    path: '/v1/sales',
    body: saleItem({ quantity: '3' }),
    field: 'items[1].quantity',
    code: 'invalid_type',
  },
  {
    name: 'negative unit_price',
    path: '/v1/sales',
    body: saleItem({ unit_price: -0.01 }),
    field: 'items[1].unit_price',
    code: 'too_small',
  },
  {
    name: 'missing unit_price',
    path: '/v1/sales',
    body: { items: [{ catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 1 }] },
    field: 'items[0].unit_price',
    code: 'required',
  },
  {
    name: 'catalog_type outside the enum',
    path: '/v1/sales',
    body: saleItem({ catalog_type: 'gift' }),
    field: 'items[1].catalog_type',
    code: 'invalid_enum',
  },
  {
    name: 'catalog_item_id not a UUID',
    path: '/v1/sales',
    body: saleItem({ catalog_item_id: 'abc' }),
    field: 'items[1].catalog_item_id',
    code: 'invalid_uuid',
  },
  {
    name: 'discount_percentage over 100',
    path: '/v1/sales',
    body: saleItem({ discount_percentage: 100.01 }),
    field: 'items[1].discount_percentage',
    code: 'too_big',
  },
  {
    name: 'negative discount_percentage',
    path: '/v1/sales',
    body: saleItem({ discount_percentage: -1 }),
    field: 'items[1].discount_percentage',
    code: 'too_small',
  },
  {
    name: 'negative item discount_amount',
    path: '/v1/sales',
    body: saleItem({ discount_amount: -1 }),
    field: 'items[1].discount_amount',
    code: 'too_small',
  },
  {
    name: 'delivery_date not YYYY-MM-DD',
    path: '/v1/sales',
    body: sale({ delivery_date: '21/11/2026' }),
    field: 'delivery_date',
    code: 'invalid_date',
  },
  {
    name: 'impossible delivery_date',
    path: '/v1/sales',
    body: sale({ delivery_date: '2026-02-30' }),
    field: 'delivery_date',
    code: 'invalid_date',
  },
  {
    name: 'sale_date not a timestamp',
    path: '/v1/sales',
    body: sale({ sale_date: 'yesterday' }),
    field: 'sale_date',
    code: 'invalid_format',
  },
  {
    name: 'transaction_type outside sale|order',
    path: '/v1/sales',
    body: sale({ transaction_type: 'quote' }),
    field: 'transaction_type',
    code: 'invalid_enum',
  },
  { name: 'negative delivery_fee', path: '/v1/sales', body: sale({ delivery_fee: -5 }), field: 'delivery_fee', code: 'too_small' },
  { name: 'customer_id not a UUID', path: '/v1/sales', body: sale({ customer_id: 'c-1' }), field: 'customer_id', code: 'invalid_uuid' },
  {
    name: 'customer_id of no customer of the account',
    path: '/v1/sales',
    body: sale({ customer_id: randomUUID() }),
    field: 'customer_id',
    code: 'not_found',
  },
  { name: 'empty status', path: '/v1/sales', body: sale({ status: '' }), field: 'status', code: 'too_short' },
  // Customers
  { name: 'customer without full_name', path: '/v1/customers', body: { email: 'a@example.com' }, field: 'full_name', code: 'required' },
  { name: 'empty full_name', path: '/v1/customers', body: customer({ full_name: '' }), field: 'full_name', code: 'too_short' },
  {
    name: 'full_name over 255',
    path: '/v1/customers',
    body: customer({ full_name: 'x'.repeat(256) }),
    field: 'full_name',
    code: 'too_long',
  },
  { name: 'invalid e-mail', path: '/v1/customers', body: customer({ email: 'not-an-email' }), field: 'email', code: 'invalid_email' },
  { name: 'empty phone', path: '/v1/customers', body: customer({ phone: '' }), field: 'phone', code: 'too_short' },
  { name: 'phone over 40', path: '/v1/customers', body: customer({ phone: '1'.repeat(41) }), field: 'phone', code: 'too_long' },
  {
    name: 'phone missing when email is null',
    path: '/v1/customers',
    body: { full_name: 'Ana', email: null },
    field: 'phone',
    code: 'required_when_email_null',
  },
  {
    name: 'phone missing and email omitted',
    path: '/v1/customers',
    body: { full_name: 'Ana' },
    field: 'phone',
    code: 'required_when_email_null',
  },
  {
    name: 'birth_date not YYYY-MM-DD',
    path: '/v1/customers',
    body: customer({ birth_date: '1990-1-2' }),
    field: 'birth_date',
    code: 'invalid_date',
  },
  {
    name: 'impossible birth_date',
    path: '/v1/customers',
    body: customer({ birth_date: '2023-02-29' }),
    field: 'birth_date',
    code: 'invalid_date',
  },
  {
    name: 'accepts_communications not boolean',
    path: '/v1/customers',
    body: customer({ accepts_communications: 'yes' }),
    field: 'accepts_communications',
    code: 'invalid_type',
  },
  // Suppliers
  { name: 'supplier without any name', path: '/v1/suppliers', body: { document_number: '123' }, field: 'name', code: 'name_required' },
  {
    name: 'supplier with blank names only',
    path: '/v1/suppliers',
    body: { name: ' ', legal_name: null, trade_name: '' },
    field: 'name',
    code: 'name_required',
  },
  { name: 'supplier e-mail invalid', path: '/v1/suppliers', body: supplier({ email: 'x@' }), field: 'email', code: 'invalid_email' },
  {
    name: 'supplier birth_date invalid',
    path: '/v1/suppliers',
    body: supplier({ birth_date: '2026-13-01' }),
    field: 'birth_date',
    code: 'invalid_date',
  },
  {
    name: 'pix key without key',
    path: '/v1/suppliers',
    body: supplier({ pix_keys: [{ type: 'cpf' }] }),
    field: 'pix_keys[0].key',
    code: 'required',
  },
  {
    name: 'pix_keys not an array',
    path: '/v1/suppliers',
    body: supplier({ pix_keys: { type: 'cpf', key: '1' } }),
    field: 'pix_keys',
    code: 'invalid_type',
  },
  // Expenses
  {
    name: 'expense without description',
    path: '/v1/expenses',
    body: { expense_type: 'x', original_amount: 1, final_amount: 1 },
    field: 'description',
    code: 'required',
  },
  {
    name: 'expense without expense_type',
    path: '/v1/expenses',
    body: { description: 'x', original_amount: 1, final_amount: 1 },
    field: 'expense_type',
    code: 'required',
  },
  {
    name: 'expense without original_amount',
    path: '/v1/expenses',
    body: { expense_type: 'x', description: 'x', final_amount: 1 },
    field: 'original_amount',
    code: 'required',
  },
  {
    name: 'expense without final_amount',
    path: '/v1/expenses',
    body: { expense_type: 'x', description: 'x', original_amount: 1 },
    field: 'final_amount',
    code: 'required',
  },
  { name: 'negative final_amount', path: '/v1/expenses', body: expense({ final_amount: -1 }), field: 'final_amount', code: 'too_small' },
  {
    name: 'negative original_amount',
    path: '/v1/expenses',
    body: expense({ original_amount: -0.5 }),
    field: 'original_amount',
    code: 'too_small',
  },
  {
    name: 'negative discount_amount',
    path: '/v1/expenses',
    body: expense({ discount_amount: -0.5 }),
    field: 'discount_amount',
    code: 'too_small',
  },
  { name: 'installments 0', path: '/v1/expenses', body: expense({ installments: 0 }), field: 'installments', code: 'too_small' },
  {
    name: 'installments not an integer',
    path: '/v1/expenses',
    body: expense({ installments: 1.5 }),
    field: 'installments',
    code: 'invalid_type',
  },
  {
    name: 'payment_date invalid',
    path: '/v1/expenses',
    body: expense({ payment_date: '2026-04-31' }),
    field: 'payment_date',
    code: 'invalid_date',
  },
  { name: 'due_date invalid', path: '/v1/expenses', body: expense({ due_date: 'tomorrow' }), field: 'due_date', code: 'invalid_date' },
  {
    name: 'supplier_id not a UUID',
    path: '/v1/expenses',
    body: expense({ supplier_id: '42' }),
    field: 'supplier_id',
    code: 'invalid_uuid',
  },
  {
    name: 'supplier_id of no supplier of the account',
    path: '/v1/expenses',
    body: expense({ supplier_id: randomUUID() }),
    field: 'supplier_id',
    code: 'not_found',
  },
  {
    name: 'bank_account_id of no bank account of the account',
    path: '/v1/expenses',
    body: expense({ bank_account_id: randomUUID() }),
    field: 'bank_account_id',
    code: 'not_found',
  },
  { name: 'tags not strings', path: '/v1/expenses', body: expense({ tags: ['a', 2] }), field: 'tags[1]', code: 'invalid_type' },
  { name: 'text with a NUL character', path: '/v1/expenses', body: expense({ notes: 'a\u0000b' }), field: 'notes', code: 'invalid_format' },
];

describe('write validation (422)', () => {
  let s: TestServer;
  let key: string;
  before(async () => {
    s = await startTestServer();
    ({ key } = await writer(s));
  });
  after(() => s.close());

  for (const c of CASES) {
    it(`refuses ${c.name} with ${c.field} / ${c.code}`, async () => {
      assertFieldError(await s.request('POST', c.path, { key, body: c.body }), c.field, c.code);
    });
  }

  it('reports every refused field of one body, once each, and writes nothing', async () => {
    const res = await s.request('POST', '/v1/sales', {
      key,
      body: {
        customer_id: 'nope',
        delivery_date: '2026-02-30',
        items: [
          item(),
          item(),
          item(),
          item({ quantity: 0, unit_price: -1, catalog_type: 'x', catalog_item_id: 'y', discount_percentage: 101 }),
        ],
      },
    });
    for (const [field, code] of [
      ['customer_id', 'invalid_uuid'],
      ['delivery_date', 'invalid_date'],
      ['items[3].quantity', 'too_small'],
      ['items[3].unit_price', 'too_small'],
      ['items[3].catalog_type', 'invalid_enum'],
      ['items[3].catalog_item_id', 'invalid_uuid'],
      ['items[3].discount_percentage', 'too_big'],
    ]) {
      assertFieldError(res, field as string, code as string);
    }
    assert.equal(res.body.errors.length, 7);
    assert.equal(new Set(res.body.errors.map((e: { field: string }) => e.field)).size, 7);
    const list = await s.request('GET', '/v1/sales', { key });
    assert.equal(list.body.data.length, 0);
  });

  it('names only the inner field when a value inside an array or object is refused', async () => {
    const cases: [string, unknown, string, string][] = [
      ['/v1/expenses', { expense_type: 'x', description: 'd', original_amount: 1, final_amount: 1, tags: [1] }, 'tags[0]', 'invalid_type'],
      ['/v1/suppliers', { name: 'x', pix_keys: [{ type: 1, key: 'k' }] }, 'pix_keys[0].type', 'invalid_type'],
      ['/v1/sales', saleItem({ unit_price: 1e20 }), 'items[1].unit_price', 'too_big'],
    ];
    for (const [path, body, field, code] of cases) {
      const res = await s.request('POST', path, { key, body });
      assert.equal(res.status, 422);
      assert.deepEqual(
        res.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]),
        [[field, code]],
        path,
      );
    }
  });

  it('merges schema errors with rule errors in one response', async () => {
    const res = await s.request('POST', '/v1/customers', { key, body: { full_name: '', email: null, birth_date: 'x' } });
    assertFieldError(res, 'full_name', 'too_short');
    assertFieldError(res, 'phone', 'required_when_email_null');
    assertFieldError(res, 'birth_date', 'invalid_date');
  });

  it('answers malformed JSON with field body / invalid_json', async () => {
    const res = await s.request('POST', '/v1/customers', {
      key,
      body: '{"full_name": "Ana",',
      headers: { 'content-type': 'application/json' },
    });
    assertFieldError(res, 'body', 'invalid_json');
  });

  it('answers a body that is not an object with field body', async () => {
    assertFieldError(await s.request('POST', '/v1/customers', { key, body: [1, 2] }), 'body', 'invalid_type');
    const created = await s.request('POST', '/v1/customers', { key, body: customer({}) });
    assertFieldError(await s.request('PATCH', `/v1/customers/${created.body.data.id}`, { key }), 'body', 'required');
  });

  it('ignores unknown and read-only fields instead of refusing them', async () => {
    const res = await s.request('POST', '/v1/customers', {
      key,
      body: {
        full_name: 'Ana',
        phone: '11 99999-0000',
        id: randomUUID(),
        created_at: '2000-01-01T00:00:00Z',
        team_id: randomUUID(),
        whatever: { a: 1 },
      },
    });
    assert.equal(res.status, 201, res.text);
    assert.notEqual(res.body.data.created_at, '2000-01-01T00:00:00.000Z');
    assert.equal('whatever' in res.body.data, false);
    assert.equal('team_id' in res.body.data, false);
  });

  it('validates PATCH bodies with the same codes', async () => {
    const created = await s.request('POST', '/v1/expenses', { key, body: expense({}) });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    assertFieldError(await s.request('PATCH', `/v1/expenses/${id}`, { key, body: { final_amount: -3 } }), 'final_amount', 'too_small');
    assertFieldError(
      await s.request('PATCH', `/v1/expenses/${id}`, { key, body: { payment_date: '2026-11-31' } }),
      'payment_date',
      'invalid_date',
    );
    assertFieldError(await s.request('PATCH', `/v1/expenses/${id}`, { key, body: { description: null } }), 'description', 'invalid_type');
    const sale = await s.request('POST', '/v1/sales', { key, body: { items: [item()] } });
    assertFieldError(
      await s.request('PATCH', `/v1/sales/${sale.body.data.id}`, { key, body: { delivery_fee: -1 } }),
      'delivery_fee',
      'too_small',
    );
    assertFieldError(
      await s.request('PATCH', `/v1/sales/${sale.body.data.id}`, { key, body: { delivery_date: '2026-00-10' } }),
      'delivery_date',
      'invalid_date',
    );
    const customerId = (await s.request('POST', '/v1/customers', { key, body: customer({}) })).body.data.id;
    assertFieldError(await s.request('PATCH', `/v1/customers/${customerId}`, { key, body: { email: 'bad' } }), 'email', 'invalid_email');
  });

  it('answers 404 for a PATCH of an unknown id before looking at the body', async () => {
    const res = await s.request('PATCH', `/v1/customers/${randomUUID()}`, { key, body: { email: 'bad' } });
    assert.equal(res.status, 404);
    assert.match(res.body.type, /\/not_found$/);
  });
});
