// The import of a JSON object of resources (DECISIONS C; `importObject`, the streaming import the
// CLI and the demo share) against the real database, read back from the tables and over
// HTTP: every resource, kept ids and timestamps, internal fields, the test-mode partition,
// atomicity, errors that name resource/index/field, and the transaction_number counter.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { inBulkTransaction } from '../src/import/bulk-session.ts';
import { loadTableSpecs } from '../src/import/column-spec.ts';
import { DataTransferError } from '../src/import/import-error.ts';
import { IMPORT_RESOURCES, IMPORT_TABLES, type ImportResourceName } from '../src/import/resources.ts';
import {
  type ImportObject,
  type StreamProgress,
  importObject,
  importObjectInSession,
  loadImportSpecs,
} from '../src/import/stream-import.ts';
import { TRANSACTION_COUNTER } from '../src/domain/numbering.ts';
import { dealStages } from '../src/resources/descriptors/deals.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { fieldKind } from '../src/schemas/common.ts';
import { byTableName, type TestServer, startTestServer } from './helpers/harness.ts';

const TABLES = [
  'customers',
  'transactions',
  'transaction_items',
  'transaction_status_history',
  'suppliers',
  'expenses',
  'recurring_expenses',
  'appointments',
  'services',
  'catalog_items',
  'inventory_items',
  'bank_accounts',
  'deals',
  'deal_stages',
];

/** One record of every resource, with fixed ids and timestamps; `n` keeps files of one test apart. */
function fullFile() {
  const id = () => randomUUID();
  const ids = {
    customer: id(),
    sale: id(),
    quote: id(),
    item1: id(),
    supplier: id(),
    expense: id(),
    recurring: id(),
    appointment: id(),
    service: id(),
    product: id(),
    deletedProduct: id(),
    inventory: id(),
    bank: id(),
    deal: id(),
    stageOpen: id(),
    stageWon: id(),
  };
  const internal = { contract_id: id(), created_by: id(), internal_notes: 'nota interna' };
  const file = {
    customers: [
      {
        id: ids.customer,
        full_name: 'Júlia Araújo',
        email: 'julia@example.com.br',
        phone: '+55 11 98765-4321',
        document: '529.982.247-25',
        birth_date: '1991-02-28',
        is_active: true,
        address_city: 'São Paulo',
        address_state: 'SP',
        accepts_communications: true,
        team_id: id(),
        ...internal,
        created_at: '2025-01-02T03:04:05.678Z',
        updated_at: '2025-02-03T04:05:06.789Z',
      },
    ],
    sales: [
      {
        id: ids.sale,
        customer_id: ids.customer,
        transaction_type: 'order',
        transaction_number: '41',
        status: 'completed',
        sale_date: '2025-03-01T12:00:00-03:00',
        delivery_date: '2025-03-03',
        subtotal: 59.97,
        discount_amount: 0,
        total_amount: 69.97,
        delivery_fee: 10,
        payment_method: 'pix',
        payment_status: 'paid',
        order_code: 'PED-1',
        ...internal,
        created_at: '2025-03-01T15:00:00.000Z',
        items: [
          {
            id: ids.item1,
            catalog_type: 'product',
            catalog_item_id: ids.product,
            quantity: 3,
            unit_price: 19.99,
            subtotal: 59.97,
            total_amount: 59.97,
          },
          {
            catalog_type: 'service',
            catalog_item_id: ids.service,
            quantity: 1,
            unit_price: 0,
            subtotal: 0,
            total_amount: 0,
            notes: 'brinde',
          },
          { catalog_type: 'package', catalog_item_id: id(), quantity: 0.125, unit_price: 0, subtotal: 0, total_amount: 0 },
        ],
        status_history: [
          { old_status: null, new_status: 'pending', created_at: '2025-03-01T15:00:00.000Z' },
          { old_status: 'pending', new_status: 'completed', change_reason: 'pago', created_at: '2025-03-01T16:00:00.000Z' },
        ],
      },
      { id: ids.quote, transaction_type: 'quote', transaction_number: '42', status: 'sent', total_amount: 10 },
    ],
    suppliers: [
      {
        id: ids.supplier,
        name: 'Pet Brasil',
        legal_name: 'Distribuidora Pet Brasil Ltda',
        document_number: '11.222.333/0001-81',
        is_employee: false,
        pix_keys: [
          { type: 'cnpj', key: '11222333000181' },
          { type: 'random', key: id() },
        ],
        ...internal,
      },
    ],
    expenses: [
      {
        id: ids.expense,
        expense_number: 'DESP-1',
        expense_type: 'rent',
        description: 'Aluguel',
        original_amount: 4800,
        final_amount: 4800,
        supplier_id: ids.supplier,
        bank_account_id: ids.bank,
        installments: 1,
        status: 'paid',
        payment_date: '2025-03-05',
        due_date: '2025-03-05',
        tags: ['fixa', 'aluguel'],
        is_recurring: true,
        recurring_expense_id: ids.recurring,
        installment_number: 1,
        total_installments: 1,
        ...internal,
      },
    ],
    recurring_expenses: [
      {
        id: ids.recurring,
        expense_template_id: ids.expense,
        recurrence_frequency: 'monthly',
        recurrence_interval: 1,
        start_date: '2025-03-05',
        next_generation_date: '2025-04-05',
        last_generated_expense_id: ids.expense,
        created_at: '2025-03-01T00:00:00Z',
      },
    ],
    appointments: [
      {
        id: ids.appointment,
        customer_id: ids.customer,
        appointment_date: '2025-03-10',
        start_time: '09:30:00',
        end_time: '11:00:00',
        status: 'scheduled',
        appointment_type: 'Banho e tosa',
        has_passed: false,
        ...internal,
      },
    ],
    services: [{ id: ids.service, name: 'Banho e tosa', duration_minutes: 90, price: 95, color: '#3B82F6', ...internal }],
    products: [
      {
        id: ids.product,
        name: 'Ração premium 15kg',
        unit: 'un',
        selling_price: 289.9,
        cost_price: 198.5,
        current_stock: 12.5,
        ean_code: '7891234567895',
        ...internal,
      },
      { id: ids.deletedProduct, name: 'Fora de linha', deleted_at: '2025-01-01T00:00:00Z' },
    ],
    inventory: [
      { id: ids.inventory, name: 'Ração premium 15kg', unit: 'un', current_stock: 12, catalog_item_id: ids.product, ...internal },
    ],
    bank_accounts: [
      {
        id: ids.bank,
        account_name: 'Conta PJ Nubank',
        bank_name: 'Nubank',
        currency: 'BRL',
        initial_balance: 1000.5,
        archived: null,
        ...internal,
      },
    ],
    deals: [
      {
        id: ids.deal,
        customer_id: ids.customer,
        stage_id: ids.stageWon,
        status: 'won',
        origin_channel: 'whatsapp',
        estimated_value: 500,
        won_transaction_id: ids.sale,
        entered_stage_at: '2025-03-01T10:00:00Z',
        closed_at: '2025-03-02T10:00:00Z',
        ...internal,
      },
    ],
    deal_stages: [
      { id: ids.stageWon, name: 'Ganho', color: '#22C55E', position: 2, milestone: 'won' },
      { id: ids.stageOpen, name: 'Novo', color: '#94A3B8', position: 1 },
    ],
  };
  return { file, ids, internal };
}

async function tenantCounts(s: TestServer, accountId: string, mode = 'live'): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await byTableName(s.db)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('team_id', '=', accountId)
      .where('mode', '=', mode)
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

async function importError(promise: Promise<unknown>): Promise<DataTransferError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof DataTransferError, `expected an DataTransferError, got ${err}`);
    return err;
  }
  assert.fail('the import was expected to fail');
}

describe('balcao import: importObject', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('accepts every field the API shows, with the type the API gives it', async () => {
    // The import reads its column types from the database; the API's row schemas must agree.
    const specs = await loadTableSpecs(s.db, IMPORT_TABLES);
    const checks: { name: string; table: string; row: (typeof RESOURCES)[number]['row'] }[] = [
      ...RESOURCES.map((r) => {
        const key = r.name.replace('-', '_') as ImportResourceName;
        assert.equal(IMPORT_RESOURCES[key]?.table, r.table, r.name);
        return { name: r.name, table: r.table, row: r.row };
      }),
      ...RESOURCES.flatMap((r) =>
        Object.entries(r.includes ?? {}).map(([name, inc]) => ({ name: `${r.name}.${name}`, table: inc.table, row: inc.item })),
      ),
      { name: 'deal_stages', table: String(IMPORT_RESOURCES.deal_stages?.table), row: dealStages.row },
    ];
    assert.equal(IMPORT_RESOURCES.sales?.children?.items?.table, RESOURCES.find((r) => r.name === 'sales')?.includes?.items?.table);
    assert.equal(IMPORT_RESOURCES.recurring_expenses?.table, RESOURCES.find((r) => r.name === 'expenses')?.includes?.recurring?.table);
    for (const { name, table, row } of checks) {
      const spec = specs.get(table);
      assert.ok(spec, table);
      for (const [field, schema] of Object.entries(row.properties)) {
        const column = spec.get(field);
        assert.ok(column, `${name}.${field} is a column of ${table}`);
        assert.equal(column.kind, fieldKind(schema), `${name}.${field}`);
      }
    }
  });

  test('imports every resource: rows, kept ids and timestamps, internal fields, counts', async () => {
    const { account } = await s.createAccountWithKey();
    const { file, ids, internal } = fullFile();
    const result = await importObject(s.database, file, { accountId: account.id, mode: 'live' });
    assert.deepEqual(result, {
      account_id: account.id,
      mode: 'live',
      counts: {
        customers: 1,
        sales: 2,
        suppliers: 1,
        expenses: 1,
        recurring_expenses: 1,
        appointments: 1,
        services: 1,
        products: 2,
        inventory: 1,
        bank_accounts: 1,
        deals: 1,
        deal_stages: 2,
      },
      nested: { 'sales.items': 3, 'sales.status_history': 2 },
    });
    assert.deepEqual(await tenantCounts(s, account.id), {
      customers: 1,
      transactions: 2,
      transaction_items: 3,
      transaction_status_history: 2,
      suppliers: 1,
      expenses: 1,
      recurring_expenses: 1,
      appointments: 1,
      services: 1,
      catalog_items: 2,
      inventory_items: 1,
      bank_accounts: 1,
      deals: 1,
      deal_stages: 2,
    });

    const customer = await s.db.selectFrom('customers').selectAll().where('id', '=', ids.customer).executeTakeFirstOrThrow();
    assert.equal(customer.team_id, account.id, 'the team_id of the file is ignored');
    assert.equal(customer.mode, 'live');
    assert.equal(customer.contract_id, internal.contract_id);
    assert.equal(customer.created_by, internal.created_by);
    assert.equal(customer.internal_notes, 'nota interna');
    assert.equal(customer.created_at, '2025-01-02T03:04:05.678Z');
    assert.equal(customer.updated_at, '2025-02-03T04:05:06.789Z');
    assert.equal(customer.birth_date, '1991-02-28');

    for (const table of [
      'transactions',
      'suppliers',
      'expenses',
      'appointments',
      'services',
      'inventory_items',
      'bank_accounts',
      'deals',
    ]) {
      const rows = await byTableName(s.db)
        .selectFrom(table)
        .select(['contract_id', 'created_by', 'internal_notes'])
        .where('team_id', '=', account.id)
        .execute();
      assert.ok(
        rows.some(
          (r) => r.contract_id === internal.contract_id && r.created_by === internal.created_by && r.internal_notes === 'nota interna',
        ),
        table,
      );
    }
    const sale = await s.db.selectFrom('transactions').selectAll().where('id', '=', ids.sale).executeTakeFirstOrThrow();
    assert.equal(sale.sale_date, '2025-03-01T15:00:00.000Z', 'the offset of the file is honoured');
    assert.equal(sale.total_amount, 69.97);
    const supplier = await s.db.selectFrom('suppliers').selectAll().where('id', '=', ids.supplier).executeTakeFirstOrThrow();
    const pixKeys = supplier.pix_keys as unknown[];
    assert.equal(pixKeys.length, 2);
    assert.deepEqual(pixKeys[0], { type: 'cnpj', key: '11222333000181' });
    assert.equal(typeof supplier.created_at, 'string', 'created_at generated when absent');
    const expense = await s.db.selectFrom('expenses').selectAll().where('id', '=', ids.expense).executeTakeFirstOrThrow();
    assert.deepEqual(expense.tags, ['fixa', 'aluguel']);
    assert.equal(expense.installment_number, 1);
    const appointment = await s.db.selectFrom('appointments').selectAll().where('id', '=', ids.appointment).executeTakeFirstOrThrow();
    assert.equal(appointment.start_time, '09:30:00');
    const bank = await s.db.selectFrom('bank_accounts').selectAll().where('id', '=', ids.bank).executeTakeFirstOrThrow();
    assert.equal(bank.archived, false, 'null on a NOT NULL column with a default takes the default');
    const product = await s.db.selectFrom('catalog_items').selectAll().where('id', '=', ids.deletedProduct).executeTakeFirstOrThrow();
    assert.equal(product.deleted_at, '2025-01-01T00:00:00.000Z');
    assert.equal(product.unit, 'un', 'a column left out takes its default');
  });

  test('imported records are served over HTTP with their fields, includes, and nothing internal', async () => {
    const { account, key } = await s.createAccountWithKey();
    const { file, ids } = fullFile();
    await importObject(s.database, file, { accountId: account.id, mode: 'live' });

    const customer = await s.request('GET', `/v1/customers/${ids.customer}`, { key });
    assert.equal(customer.status, 200);
    assert.equal(customer.body.data.full_name, 'Júlia Araújo');
    assert.equal(customer.body.data.created_at, '2025-01-02T03:04:05.678Z');
    for (const field of ['team_id', 'contract_id', 'created_by', 'internal_notes', 'mode'])
      assert.ok(!(field in customer.body.data), field);

    const sale = await s.request('GET', `/v1/sales/${ids.sale}?include=items,status_history`, { key });
    assert.equal(sale.status, 200);
    assert.equal(sale.body.data.transaction_type, 'order');
    assert.equal(sale.body.data.total_amount, 69.97);
    assert.deepEqual(
      sale.body.data.items.map((i: any) => [i.catalog_type, i.quantity, i.unit_price, i.subtotal]),
      [
        ['product', 3, 19.99, 59.97],
        ['service', 1, 0, 0],
        ['package', 0.125, 0, 0],
      ],
      'items keep the order of the file',
    );
    assert.equal(sale.body.data.items[0].id, ids.item1);
    assert.equal(sale.body.data.items[0].created_at, '2025-03-01T15:00:00.000Z', 'items default to their sale’s creation time');
    assert.deepEqual(
      sale.body.data.status_history.map((h: any) => [h.old_status, h.new_status]),
      [
        [null, 'pending'],
        ['pending', 'completed'],
      ],
    );
    assert.equal((await s.request('GET', `/v1/sales/${ids.quote}`, { key })).status, 404, 'a quote is stored but never served');
    const list = await s.request('GET', '/v1/sales', { key });
    assert.deepEqual(
      list.body.data.map((x: any) => x.id),
      [ids.sale],
    );

    const expense = await s.request('GET', `/v1/expenses/${ids.expense}?include=recurring`, { key });
    assert.equal(expense.body.data.recurring.id, ids.recurring);
    assert.equal(expense.body.data.recurring.next_generation_date, '2025-04-05');

    const products = await s.request('GET', '/v1/products', { key });
    assert.deepEqual(
      products.body.data.map((p: any) => p.id),
      [ids.product],
      'a deleted product never appears',
    );
    assert.equal((await s.request('GET', `/v1/products/${ids.deletedProduct}`, { key })).status, 404);

    const stages = await s.request('GET', '/v1/deals/stages', { key });
    assert.deepEqual(
      stages.body.data.map((st: any) => [st.name, st.position, st.milestone]),
      [
        ['Novo', 1, null],
        ['Ganho', 2, 'won'],
      ],
    );
    for (const [path, id] of [
      ['suppliers', ids.supplier],
      ['appointments', ids.appointment],
      ['services', ids.service],
      ['inventory', ids.inventory],
      ['bank-accounts', ids.bank],
      ['deals', ids.deal],
    ] as const) {
      const r = await s.request('GET', `/v1/${path}/${id}`, { key });
      assert.equal(r.status, 200, path);
      assert.equal(r.body.data.id, id, path);
    }
  });

  test('--test imports into the test-mode partition, which only test keys see', async () => {
    const { account, key: liveKey } = await s.createAccountWithKey();
    const { key: testKey } = await s.createKey(account.id, { test: true });
    const { file, ids } = fullFile();
    const result = await importObject(s.database, file, { accountId: account.id, mode: 'test' });
    assert.equal(result.mode, 'test');
    assert.equal(total(await tenantCounts(s, account.id, 'live')), 0);
    assert.equal((await tenantCounts(s, account.id, 'test')).customers, 1);
    assert.equal((await s.request('GET', `/v1/customers/${ids.customer}`, { key: liveKey })).status, 404);
    assert.equal((await s.request('GET', `/v1/customers/${ids.customer}`, { key: testKey })).status, 200);
  });

  test('an invalid record at the end imports nothing, and the error names resource, index and field', async () => {
    const { account } = await s.createAccountWithKey();
    const { file } = fullFile();
    const customers = Array.from({ length: 30 }, (_, i) => ({ full_name: `Cliente ${i}`, email: `c${i}@example.com` }));
    customers.push({ full_name: 'Último', email: 'sem-arroba' });
    const err = await importError(importObject(s.database, { ...file, customers }, { accountId: account.id, mode: 'live' }));
    assert.equal(err.issues[0]?.path, 'customers[30].email');
    assert.match(err.message, /^customers\[30\]\.email: /);
    assert.equal(total(await tenantCounts(s, account.id)), 0);
  });

  test('a failure while writing rolls everything back (an id already stored)', async () => {
    const { account } = await s.createAccountWithKey();
    const first = fullFile();
    await importObject(s.database, { customers: first.file.customers }, { accountId: account.id, mode: 'live' });
    const before = total(await tenantCounts(s, account.id));
    const second = fullFile();
    // The customer id is taken (ids are unique per account): refused by name, nothing of the file written.
    const err = await importError(
      importObject(
        s.database,
        { ...second.file, customers: [...second.file.customers, { id: first.ids.customer, full_name: 'Dup' }] },
        { accountId: account.id, mode: 'live' },
      ),
    );
    assert.equal(err.message, 'customers[1].id: a record with this id already exists');
    assert.equal(total(await tenantCounts(s, account.id)), before);
  });

  test('each refusal names the resource, the index and the field', async () => {
    const { account } = await s.createAccountWithKey();
    const uuid = randomUUID();
    const item = { catalog_type: 'product', catalog_item_id: uuid, quantity: 1, unit_price: 1, subtotal: 1, total_amount: 1 };
    const cases: [unknown, string, RegExp][] = [
      [{ customers: [{ full_name: 'A', id: 'abc' }] }, 'customers[0].id', /UUID/],
      [{ customers: [{}] }, 'customers[0].full_name', /required/],
      [{ customers: [{ full_name: null }] }, 'customers[0].full_name', /required/],
      [{ customers: [{ full_name: 7 }] }, 'customers[0].full_name', /string/],
      [{ customers: [{ full_name: 'A', is_active: 'true' }] }, 'customers[0].is_active', /true or false/],
      [{ customers: [{ full_name: 'A', birth_date: '2025-02-29' }] }, 'customers[0].birth_date', /YYYY-MM-DD/],
      [{ customers: [{ full_name: 'A', birth_date: '01/02/2025' }] }, 'customers[0].birth_date', /YYYY-MM-DD/],
      [{ customers: [{ full_name: 'A', created_at: '2025-13-01T00:00:00Z' }] }, 'customers[0].created_at', /ISO 8601/],
      [{ customers: [{ full_name: 'A', favourite_colour: 'azul' }] }, 'customers[0].favourite_colour', /unknown field/],
      [{ customers: [{ full_name: 'A', mode: 'test' }] }, 'customers[0].mode', /--test/],
      [{ customers: [{ full_name: 'A\u0000' }] }, 'customers[0].full_name', /NUL/],
      [{ customers: [{ full_name: 'A' }, 'B'] }, 'customers[1]', /object/],
      [{ customers: { full_name: 'A' } }, 'customers', /array/],
      [{ clients: [] }, 'clients', /unknown resource/],
      [{ services: [{ name: 'S', duration_minutes: 1.5 }] }, 'services[0].duration_minutes', /integer/],
      [{ services: [{ name: 'S', duration_minutes: 2 ** 31 }] }, 'services[0].duration_minutes', /integer between/],
      [{ services: [{ name: 'S', duration_minutes: 30, price: '95.00' }] }, 'services[0].price', /number/],
      [{ services: [{ name: 'S', duration_minutes: 30, price: 1e12 }] }, 'services[0].price', /less than/],
      [
        {
          appointments: [{ customer_id: uuid, appointment_date: '2025-01-01', start_time: '24:00:00', end_time: '10:00:00', status: 's' }],
        },
        'appointments[0].start_time',
        /HH:MM:SS/,
      ],
      [
        { appointments: [{ customer_id: uuid, appointment_date: '2025-01-01', start_time: '09:00', end_time: '10:00:00', status: 's' }] },
        'appointments[0].start_time',
        /HH:MM:SS/,
      ],
      [
        { expenses: [{ expense_type: 't', description: 'd', original_amount: 1, final_amount: 1, tags: ['a', 2] }] },
        'expenses[0].tags',
        /array of strings/,
      ],
      [{ expenses: [{ expense_type: 't', description: 'd', original_amount: 1 }] }, 'expenses[0].final_amount', /required/],
      [
        { expenses: [{ expense_type: 't', description: 'd', original_amount: -1, final_amount: 1 }] },
        'expenses[0].original_amount',
        /at least 0/,
      ],
      [
        { expenses: [{ expense_type: 't', description: 'd', original_amount: 1, final_amount: 1, installments: 0 }] },
        'expenses[0].installments',
        /at least 1/,
      ],
      [{ sales: [{ delivery_fee: -1 }] }, 'sales[0].delivery_fee', /at least 0/],
      [{ sales: [{ items: [{ ...item, quantity: 0 }] }] }, 'sales[0].items[0].quantity', /greater than 0/],
      [{ sales: [{ items: [{ ...item, unit_price: -1 }] }] }, 'sales[0].items[0].unit_price', /at least 0/],
      [{ sales: [{ items: [{ ...item, discount_percentage: 150 }] }] }, 'sales[0].items[0].discount_percentage', /at most 100/],
      [{ suppliers: [{ name: 'F', pix_keys: [{ type: 'cpf' }] }] }, 'suppliers[0].pix_keys', /key/],
      [{ suppliers: [{ name: 'F', pix_keys: { type: 'cpf', key: '1' } }] }, 'suppliers[0].pix_keys', /array/],
      [{ suppliers: [{ name: 'F', email: 'x' }] }, 'suppliers[0].email', /e-mail/],
      [{ sales: [{ items: [item, { ...item, quantity: '2' }] }] }, 'sales[0].items[1].quantity', /number/],
      [{ sales: [{ items: [{ ...item, catalog_type: 'gift' }] }] }, 'sales[0].items[0].catalog_type', /product, service, package/],
      [{ sales: [{ items: [{ ...item, subtotal: undefined }] }] }, 'sales[0].items[0].subtotal', /required/],
      [{ sales: [{ items: [{ ...item, transaction_id: uuid }] }] }, 'sales[0].items[0].transaction_id', /nested/],
      [{ sales: [{ status_history: [{ old_status: 'a' }] }] }, 'sales[0].status_history[0].new_status', /required/],
      [{ sales: [{ items: { a: 1 } }] }, 'sales[0].items', /array/],
      [{ sales: [{ transaction_type: '' }] }, 'sales[0].transaction_type', /empty/],
      [{ deals: [{ customer_id: uuid, stage_id: uuid, status: 'open' }] }, 'deals[0].origin_channel', /required/],
      [
        {
          deal_stages: [
            { name: 'N', position: 1, id: uuid },
            { name: 'M', position: 2, id: uuid.toUpperCase() },
          ],
        },
        'deal_stages[1].id',
        /duplicate id/,
      ],
      [{ products: [{ name: 'P', deleted_at: 'yesterday' }] }, 'products[0].deleted_at', /ISO 8601/],
      [
        { recurring_expenses: [{ expense_template_id: uuid, recurrence_frequency: 'monthly', start_date: '2025-01-01' }] },
        'recurring_expenses[0].next_generation_date',
        /required/,
      ],
    ];
    for (const [file, path, message] of cases) {
      const err = await importError(importObject(s.database, file as ImportObject, { accountId: account.id, mode: 'live' }));
      assert.equal(err.issues[0]?.path, path, JSON.stringify(file));
      assert.match(err.message, message, JSON.stringify(file));
      assert.ok(err.message.startsWith(`${path}: `), err.message);
      assert.ok(!err.message.includes('\n'));
    }
    assert.equal(total(await tenantCounts(s, account.id)), 0);
  });

  test('several errors: the first is named and the rest counted', async () => {
    const { account } = await s.createAccountWithKey();
    const err = await importError(
      importObject(
        s.database,
        { customers: [{ full_name: 'A', email: 'x' }, { email: 'y@z.com' }, { full_name: 'C', foo: 1 }] },
        { accountId: account.id, mode: 'live' },
      ),
    );
    assert.equal(err.message, 'customers[0].email: must be an e-mail address (and 2 more errors)');
    assert.deepEqual(
      err.issues.map((i) => i.path),
      ['customers[0].email', 'customers[1].full_name', 'customers[2].foo'],
    );
  });

  test('refuses an unknown account', async () => {
    const missing = randomUUID();
    assert.equal(
      (await importError(importObject(s.database, { customers: [] }, { accountId: missing, mode: 'live' }))).message,
      `account ${missing} not found`,
    );
    assert.match((await importError(importObject(s.database, {}, { accountId: 'nope', mode: 'live' }))).message, /not an account id/);
  });

  test('fills what the API fills: transaction_type sale, a generated expense_number', async () => {
    const { account, key } = await s.createAccountWithKey();
    const sale = randomUUID();
    const expense = randomUUID();
    await importObject(
      s.database,
      {
        sales: [{ id: sale, total_amount: 5 }],
        expenses: [{ id: expense, expense_type: 'x', description: 'd', original_amount: 1, final_amount: 1 }],
      },
      { accountId: account.id, mode: 'live' },
    );
    assert.equal((await s.request('GET', `/v1/sales/${sale}`, { key })).body.data.transaction_type, 'sale');
    assert.match((await s.request('GET', `/v1/expenses/${expense}`, { key })).body.data.expense_number, /^API-\d+-[0-9a-z]{6}$/);
  });

  test('new sales are numbered after the largest imported transaction_number', async () => {
    const { account, key } = await s.createAccountWithKey();
    const { key: testKey } = await s.createKey(account.id, { test: true });
    const item = { catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 1, unit_price: 1 };
    const post = async (k: string) => {
      const r = await s.request('POST', '/v1/sales', { key: k, body: { items: [item] }, headers: { 'idempotency-key': randomUUID() } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.data.transaction_number;
    };
    await importObject(
      s.database,
      {
        sales: [
          { transaction_number: '7' },
          { transaction_number: '120' },
          { transaction_number: 'PED-999' },
          { transaction_type: 'quote', transaction_number: '15' },
        ],
      },
      { accountId: account.id, mode: 'live' },
    );
    assert.equal(await post(key), '121');
    // A later import with smaller numbers leaves the counter where it is; a larger one moves it.
    await importObject(s.database, { sales: [{ transaction_number: '50' }] }, { accountId: account.id, mode: 'live' });
    assert.equal(await post(key), '122');
    await importObject(s.database, { sales: [{ transaction_number: '500' }] }, { accountId: account.id, mode: 'live' });
    assert.equal(await post(key), '501');
    const counter = await s.db
      .selectFrom('tenant_counters')
      .select('value')
      .where('team_id', '=', account.id)
      .where('mode', '=', 'live')
      .where('name', '=', TRANSACTION_COUNTER)
      .executeTakeFirstOrThrow();
    assert.equal(Number(counter.value), 501);
    assert.equal(await post(testKey), '1', 'the test-mode counter is separate');
  });

  test('runs inside a caller’s bulk transaction, which decides commit or rollback', async () => {
    const { account } = await s.createAccountWithKey();
    const specs = await loadImportSpecs(s.database);
    await assert.rejects(
      inBulkTransaction(s.database.driver, async (session) => {
        await importObjectInSession(session, specs, { customers: [{ full_name: 'Dentro' }] }, { accountId: account.id, mode: 'live' });
        throw new Error('caller gives up');
      }),
      /caller gives up/,
    );
    assert.equal(total(await tenantCounts(s, account.id)), 0);
  });

  test('reports progress up to the number of rows written', async () => {
    const { account } = await s.createAccountWithKey();
    const seen: StreamProgress[] = [];
    const customers = Array.from({ length: 12_000 }, (_, i) => ({ full_name: `C${i}` }));
    const sales = [{ total_amount: 1, status_history: [{ new_status: 'pending' }, { old_status: 'pending', new_status: 'paid' }] }];
    await importObject(s.database, { customers, sales }, { accountId: account.id, mode: 'live', onProgress: (p) => seen.push(p) });
    assert.equal(seen.at(-1)?.rows, 12_003);
    const written = seen.map((p) => p.rows);
    assert.ok(written.every((rows, i) => i === 0 || rows >= (written[i - 1] as number)));
    assert.equal((await tenantCounts(s, account.id)).customers, 12_000);
  });
});
