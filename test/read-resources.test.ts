// Every read resource over HTTP: the exact field set of SPEC part 2 with its types, internal
// columns never present, GET by id (projection, 404s) and the deal stages endpoint.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { DATE_ONLY, ISO_MS, TIME_ONLY, UNLIMITED, UUID, insertRow, insertRows } from './helpers/read-data.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';

type Kind = 'uuid' | 'string' | 'number' | 'integer' | 'boolean' | 'timestamp' | 'date' | 'time' | 'string[]' | 'pix_keys';
/** `?` marks a nullable field (SPEC part 2). */
type Spec = Record<string, `${Kind}` | `${Kind}?`>;

const INTERNAL = { contract_id: randomUUID(), created_by: randomUUID(), internal_notes: 'segredo interno' };
const TS = new Date('2026-05-04T03:02:01.789Z');
const PIX = [{ type: 'email', key: 'f@example.com' }];

const addr = (prefix: string) =>
  Object.fromEntries(
    ['country', 'state', 'city', 'neighborhood', 'street', 'number', 'zip_code'].map((k) => [`address_${k}`, `${prefix}-${k}`]),
  );

const RESOURCES: { path: string; table: string; full: Record<string, unknown>; spec: Spec }[] = [
  {
    path: 'customers',
    table: 'customers',
    full: {
      external_id: 'erp-0001',
      full_name: 'Maria Silva',
      email: 'maria@example.com',
      phone: '+5511999990000',
      document: '123.456.789-09',
      birth_date: '1990-02-03',
      notes: 'cliente antiga',
      is_active: true,
      gender: 'F',
      ...addr('c'),
      address_complement: 'apto 1',
      accepts_communications: true,
      valid_whatsapp: false,
      profile_photo_url: 'https://img/p.png',
      whatsapp_photo: 'https://img/w.png',
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      full_name: 'string',
      email: 'string?',
      phone: 'string?',
      document: 'string?',
      birth_date: 'date?',
      notes: 'string?',
      is_active: 'boolean?',
      gender: 'string?',
      address_country: 'string?',
      address_state: 'string?',
      address_city: 'string?',
      address_neighborhood: 'string?',
      address_street: 'string?',
      address_number: 'string?',
      address_complement: 'string?',
      address_zip_code: 'string?',
      accepts_communications: 'boolean?',
      valid_whatsapp: 'boolean?',
      profile_photo_url: 'string?',
      whatsapp_photo: 'string?',
      external_id: 'string?',
      created_at: 'timestamp',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'sales',
    table: 'transactions',
    full: {
      external_id: 'erp-0001',
      customer_id: randomUUID(),
      transaction_type: 'order',
      transaction_number: '7',
      status: 'completed',
      sale_date: TS,
      delivery_date: '2026-05-10',
      subtotal: 59.97,
      discount_amount: 1.5,
      discount_percentage: 2.5,
      tax_amount: 0.33,
      total_amount: 63.47,
      notes: 'entregar à tarde',
      payment_method: 'pix',
      payment_status: 'paid',
      delivery_fee: 5,
      order_code: 'EXT-1',
      is_active: true,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      customer_id: 'uuid?',
      transaction_type: 'string',
      transaction_number: 'string?',
      status: 'string?',
      sale_date: 'timestamp?',
      delivery_date: 'date?',
      subtotal: 'number?',
      discount_amount: 'number?',
      discount_percentage: 'number?',
      tax_amount: 'number?',
      total_amount: 'number?',
      notes: 'string?',
      payment_method: 'string?',
      payment_status: 'string?',
      delivery_fee: 'number?',
      order_code: 'string?',
      is_active: 'boolean?',
      external_id: 'string?',
      created_at: 'timestamp',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'suppliers',
    table: 'suppliers',
    full: {
      external_id: 'erp-0001',
      name: 'Fornecedor',
      legal_name: 'Fornecedor Ltda',
      trade_name: 'Forn',
      document_number: '12.345.678/0001-90',
      email: 'f@example.com',
      phone: '1',
      phone1: '2',
      phone2: '3',
      phone3: '4',
      rg: '55',
      code: 'F1',
      birth_date: '1980-01-01',
      is_employee: false,
      is_active: true,
      ...addr('s'),
      pix_keys: sql`cast(${JSON.stringify(PIX)} as jsonb)`,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      name: 'string?',
      legal_name: 'string?',
      trade_name: 'string?',
      document_number: 'string?',
      email: 'string?',
      phone: 'string?',
      phone1: 'string?',
      phone2: 'string?',
      phone3: 'string?',
      rg: 'string?',
      code: 'string?',
      birth_date: 'date?',
      is_employee: 'boolean?',
      is_active: 'boolean?',
      address_street: 'string?',
      address_number: 'string?',
      address_neighborhood: 'string?',
      address_city: 'string?',
      address_state: 'string?',
      address_country: 'string?',
      address_zip_code: 'string?',
      pix_keys: 'pix_keys?',
      external_id: 'string?',
      created_at: 'timestamp',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'expenses',
    table: 'expenses',
    full: {
      external_id: 'erp-0001',
      expense_number: 'E-9',
      expense_type: 'variavel',
      description: 'luz',
      original_amount: 120.5,
      discount_amount: 0.5,
      final_amount: 120,
      category_id: randomUUID(),
      subcategory_id: randomUUID(),
      cost_center_id: randomUUID(),
      supplier_id: randomUUID(),
      bank_account_id: randomUUID(),
      credit_card_id: randomUUID(),
      payment_method: 'bank_slip',
      check_number: '000123',
      installments: 3,
      status: 'paid',
      payment_date: '2026-04-01',
      due_date: '2026-04-05',
      notes: 'conta de luz',
      tags: ['casa', 'energia'],
      is_recurring: true,
      is_active: true,
      payment_reference: 'REF',
      recurring_expense_id: randomUUID(),
      installment_number: 1,
      total_installments: 3,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      expense_number: 'string',
      expense_type: 'string',
      description: 'string',
      original_amount: 'number',
      discount_amount: 'number?',
      final_amount: 'number',
      category_id: 'uuid?',
      subcategory_id: 'uuid?',
      cost_center_id: 'uuid?',
      supplier_id: 'uuid?',
      bank_account_id: 'uuid?',
      credit_card_id: 'uuid?',
      payment_method: 'string?',
      check_number: 'string?',
      installments: 'integer?',
      status: 'string?',
      payment_date: 'date?',
      due_date: 'date?',
      notes: 'string?',
      tags: 'string[]?',
      is_recurring: 'boolean?',
      is_active: 'boolean?',
      payment_reference: 'string?',
      recurring_expense_id: 'uuid?',
      installment_number: 'integer?',
      total_installments: 'integer?',
      external_id: 'string?',
      created_at: 'timestamp',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'appointments',
    table: 'appointments',
    full: {
      appointment_date: '2026-06-01',
      start_time: '14:30:00',
      end_time: '15:00:00',
      status: 'confirmed',
      appointment_type: 'retorno',
      notes: 'nota',
      customer_notes: 'obs',
      cancellation_reason: 'nenhum',
      has_passed: false,
      transaction_id: randomUUID(),
      pet_id: randomUUID(),
      is_active: true,
      created_at: TS,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      customer_id: 'uuid',
      appointment_date: 'date',
      start_time: 'time',
      end_time: 'time',
      status: 'string',
      appointment_type: 'string?',
      notes: 'string?',
      customer_notes: 'string?',
      cancellation_reason: 'string?',
      has_passed: 'boolean?',
      transaction_id: 'uuid?',
      pet_id: 'uuid?',
      is_active: 'boolean?',
      created_at: 'timestamp?',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'services',
    table: 'services',
    full: {
      name: 'Corte',
      description: 'corte de cabelo',
      category_id: randomUUID(),
      duration_minutes: 45,
      price: 80.9,
      requires_staff: true,
      color: '#ff0000',
      is_active: true,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      name: 'string',
      description: 'string?',
      category_id: 'uuid?',
      duration_minutes: 'integer',
      price: 'number?',
      requires_staff: 'boolean?',
      color: 'string?',
      is_active: 'boolean?',
      created_at: 'timestamp?',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'products',
    table: 'catalog_items',
    full: {
      name: 'Shampoo',
      description: 'shampoo 300ml',
      unit: 'un',
      selling_price: 29.9,
      cost_price: 12.35,
      is_variable_price: false,
      min_price: 25,
      max_price: 35,
      ean_code: '7890000000001',
      internal_code: 'SH-1',
      category_id: randomUUID(),
      subcategory_id: randomUUID(),
      current_stock: 12.5,
      min_stock_alert: 2.25,
      manages_stock: true,
      is_in_catalog: true,
      allows_appointments: false,
      is_active: true,
      image_url: 'https://img/s.png',
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      name: 'string',
      description: 'string?',
      unit: 'string',
      selling_price: 'number',
      cost_price: 'number',
      is_variable_price: 'boolean?',
      min_price: 'number?',
      max_price: 'number?',
      ean_code: 'string?',
      internal_code: 'string?',
      category_id: 'uuid?',
      subcategory_id: 'uuid?',
      current_stock: 'number?',
      min_stock_alert: 'number?',
      manages_stock: 'boolean?',
      is_in_catalog: 'boolean?',
      allows_appointments: 'boolean?',
      is_active: 'boolean?',
      image_url: 'string?',
      created_at: 'timestamp?',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'inventory',
    table: 'inventory_items',
    full: {
      name: 'Farinha',
      description: 'saco 5kg',
      unit: 'kg',
      current_stock: 10.125,
      min_stock_alert: 2,
      ean_code: '789',
      catalog_item_id: randomUUID(),
      is_in_catalog: false,
      is_active: true,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      name: 'string',
      description: 'string?',
      unit: 'string?',
      current_stock: 'number?',
      min_stock_alert: 'number?',
      ean_code: 'string?',
      catalog_item_id: 'uuid?',
      is_in_catalog: 'boolean?',
      is_active: 'boolean?',
      created_at: 'timestamp?',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'bank-accounts',
    table: 'bank_accounts',
    full: {
      account_name: 'Conta PJ',
      bank_name: 'Banco',
      agency_number: '0001',
      account_number: '12345-6',
      account_type: 'checking',
      currency: 'BRL',
      initial_balance: 1000,
      current_balance: 1234.56,
      is_active: true,
      archived: false,
      notes: 'principal',
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      account_name: 'string',
      bank_name: 'string?',
      agency_number: 'string?',
      account_number: 'string?',
      account_type: 'string?',
      currency: 'string?',
      initial_balance: 'number?',
      current_balance: 'number?',
      is_active: 'boolean?',
      archived: 'boolean',
      notes: 'string?',
      created_at: 'timestamp?',
      updated_at: 'timestamp?',
    },
  },
  {
    path: 'deals',
    table: 'deals',
    full: {
      status: 'won',
      origin_channel: 'instagram',
      estimated_value: 1500.75,
      assigned_to_user_id: randomUUID(),
      lost_reason: 'preço',
      quote_transaction_id: randomUUID(),
      won_transaction_id: randomUUID(),
      entered_stage_at: TS,
      closed_at: TS,
      updated_at: TS,
    },
    spec: {
      id: 'uuid',
      customer_id: 'uuid',
      stage_id: 'uuid',
      status: 'string',
      origin_channel: 'string',
      estimated_value: 'number?',
      assigned_to_user_id: 'uuid?',
      lost_reason: 'string?',
      quote_transaction_id: 'uuid?',
      won_transaction_id: 'uuid?',
      entered_stage_at: 'timestamp',
      closed_at: 'timestamp?',
      created_at: 'timestamp',
      updated_at: 'timestamp',
    },
  },
];

function checkType(kind: Kind, value: unknown, where: string): void {
  const ok: Record<Kind, (v: unknown) => boolean> = {
    uuid: (v) => typeof v === 'string' && UUID.test(v),
    string: (v) => typeof v === 'string',
    number: (v) => typeof v === 'number' && Number.isFinite(v),
    integer: (v) => Number.isInteger(v),
    boolean: (v) => typeof v === 'boolean',
    timestamp: (v) => typeof v === 'string' && ISO_MS.test(v),
    date: (v) => typeof v === 'string' && DATE_ONLY.test(v),
    time: (v) => typeof v === 'string' && TIME_ONLY.test(v),
    'string[]': (v) => Array.isArray(v) && v.every((x) => typeof x === 'string'),
    pix_keys: (v) => Array.isArray(v) && v.every((x) => typeof x.type === 'string' && typeof x.key === 'string'),
  };
  assert.ok(ok[kind](value), `${where}: ${JSON.stringify(value)} is not a ${kind}`);
}

/** Checks a record against its spec; `full` means every field must be non-null. */
function checkRecord(record: Record<string, unknown>, spec: Spec, where: string, full: boolean): void {
  assert.deepEqual(Object.keys(record).sort(), Object.keys(spec).sort(), `${where}: field set`);
  for (const [field, type] of Object.entries(spec)) {
    const nullable = type.endsWith('?');
    const value = record[field];
    if (value === null) {
      assert.ok(nullable && !full, `${where}.${field} is null`);
      continue;
    }
    checkType(type.replace('?', '') as Kind, value, `${where}.${field}`);
  }
}

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => s?.close());

describe('field sets and types', () => {
  for (const r of RESOURCES) {
    test(`${r.path}: list and get by id return every SPEC field with its type and nothing internal`, async () => {
      const { account, key } = await s.createAccountWithKey(UNLIMITED);
      const tenant = { accountId: account.id, mode: 'live' as const };
      const full = await insertRow(s.db, r.table, tenant, { created_at: new Date('2026-01-01T00:00:00.000Z'), ...r.full, ...INTERNAL });
      const minimal = await insertRow(s.db, r.table, tenant, {});

      const list = await s.request('GET', `/v1/${r.path}?sort=created_at`, { key });
      assert.equal(list.status, 200);
      assert.equal(list.body.data.length, 2);
      const [a, b] = list.body.data;
      assert.equal(a.id, full.id);
      assert.equal(b.id, minimal.id);
      checkRecord(a, r.spec, `${r.path}[full]`, true);
      checkRecord(b, r.spec, `${r.path}[minimal]`, false);
      for (const internal of ['team_id', 'mode', 'contract_id', 'created_by', 'internal_notes', 'deleted_at']) {
        assert.ok(!(internal in a), `${internal} must never appear`);
        assert.ok(!list.text.includes(INTERNAL.internal_notes));
      }
      // Values survive the trip with their JSON types (money as numbers, timestamps with ms).
      for (const [field, value] of Object.entries(r.full)) {
        const expected = value instanceof Date ? value.toISOString() : field === 'pix_keys' ? PIX : value;
        assert.deepEqual(a[field], expected, `${r.path}.${field}`);
      }

      const one = await s.request('GET', `/v1/${r.path}/${full.id}`, { key });
      assert.equal(one.status, 200);
      assert.deepEqual(one.body.data, a);
      assert.deepEqual(Object.keys(one.body), ['data', 'meta']);
      assert.equal(one.body.meta.request_id, one.headers.get('x-request-id'));
    });
  }
});

describe('get by id', () => {
  test('an unknown id, a non-UUID id and another account’s id all answer 404 not_found', async () => {
    const { key } = await s.createAccountWithKey(UNLIMITED);
    const other = await s.createAccountWithKey(UNLIMITED);
    const theirs = await insertRow(s.db, 'customers', { accountId: other.account.id, mode: 'live' }, { full_name: 'Alheio' });
    for (const id of [randomUUID(), 'not-a-uuid', '123', theirs.id, `${theirs.id}x`, 'DROP%20TABLE']) {
      const res = await s.request('GET', `/v1/customers/${id}`, { key });
      assert.equal(res.status, 404, String(id));
      assert.ok(res.body.type.endsWith('/not_found'));
      assert.equal(res.body.detail, 'The requested resource does not exist.');
    }
  });

  test('fields projects the item and always keeps id; unknown fields are refused', async () => {
    const { account, key } = await s.createAccountWithKey(UNLIMITED);
    const c = await insertRow(s.db, 'customers', { accountId: account.id, mode: 'live' }, { full_name: 'Ana', email: 'ana@x.io' });
    const res = await s.request('GET', `/v1/customers/${c.id}?fields=email,full_name`, { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { id: c.id, full_name: 'Ana', email: 'ana@x.io' });
    const onlyId = await s.request('GET', `/v1/customers/${c.id}?fields=id`, { key });
    assert.deepEqual(onlyId.body.data, { id: c.id });
    const bad = await s.request('GET', `/v1/customers/${c.id}?fields=full_name,team_id`, { key });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail, 'fields_not_allowed:team_id');
  });

  test('an uppercase UUID finds the record', async () => {
    const { account, key } = await s.createAccountWithKey(UNLIMITED);
    const c = await insertRow(s.db, 'customers', { accountId: account.id, mode: 'live' }, {});
    const res = await s.request('GET', `/v1/customers/${String(c.id).toUpperCase()}`, { key });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.id, c.id);
  });
});

describe('deal stages', () => {
  test('GET /v1/deals/stages returns the tenant’s stages by position in an item envelope, at most 100', async () => {
    const { account, key } = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: account.id, mode: 'live' as const };
    const positions = Array.from({ length: 105 }, (_, i) => (i * 37) % 105);
    await insertRows(
      s.db,
      'deal_stages',
      tenant,
      positions.map((p) => ({
        name: `etapa ${p}`,
        position: p,
        color: p % 2 ? '#00ff00' : null,
        milestone: p === 3 ? 'won' : null,
        ...INTERNAL,
      })),
    );
    await insertRow(s.db, 'deal_stages', { accountId: account.id, mode: 'test' }, { name: 'sandbox', position: -1 });
    const res = await s.request('GET', '/v1/deals/stages?limit=1&sort=name', { key });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['data', 'meta']);
    assert.equal(res.body.data.length, 100);
    assert.deepEqual(
      res.body.data.map((st: { position: number }) => st.position),
      Array.from({ length: 100 }, (_, i) => i),
    );
    const spec: Spec = { id: 'uuid', name: 'string', color: 'string?', position: 'integer', milestone: 'string?', is_active: 'boolean?' };
    for (const st of res.body.data) checkRecord(st, spec, 'stage', false);
    assert.equal(res.body.data[3].milestone, 'won');
  });

  test('deal stages need deals:read and the crm_funil module', async () => {
    const { account } = await s.createAccountWithKey(UNLIMITED);
    const noScope = await s.createKey(account.id, { scopes: ['customers:read'] });
    assert.equal((await s.request('GET', '/v1/deals/stages', { key: noScope.key })).status, 403);
    const noModule = await s.createAccountWithKey({ modules: ['clientes'], scopes: ['deals:read'] });
    const res = await s.request('GET', '/v1/deals/stages', { key: noModule.key });
    assert.equal(res.status, 403);
    assert.ok(res.body.type.endsWith('/module_not_enabled'));
  });
});
