// The demo account's sample data (`seedDemoData`): deterministic counts, every resource served,
// sale totals that follow SPEC 2.2, valid CPF/CNPJ, the numbering counter, live and test data.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { buildDemoData, createDemoAccount, seedDemoData } from '../src/demo/seed-demo-data.ts';
import { MODULES } from '../src/domain/modules.ts';
import { type TestResponse, type TestServer, startTestServer } from './helpers/harness.ts';

const NOW = new Date('2026-11-21T15:30:00.000Z');

const EXPECTED_COUNTS = {
  customers: 60,
  sales: 80,
  suppliers: 13,
  expenses: 46,
  recurring_expenses: 4,
  appointments: 60,
  services: 10,
  products: 15,
  inventory: 16,
  bank_accounts: 4,
  deals: 24,
  deal_stages: 6,
};

/** Check digits of CPF (11 digits) and CNPJ (14 digits), computed here independently. */
function validCpf(value: string): boolean {
  const d = value.replace(/\D/g, '').split('').map(Number);
  if (d.length !== 11 || d.every((x) => x === d[0])) return false;
  const check = (n: number) => {
    const sum = d.slice(0, n).reduce((acc, x, i) => acc + x * (n + 1 - i), 0);
    const r = (sum * 10) % 11;
    return r === 10 ? 0 : r;
  };
  return check(9) === d[9] && check(10) === d[10];
}

function validCnpj(value: string): boolean {
  const d = value.replace(/\D/g, '').split('').map(Number);
  if (d.length !== 14) return false;
  const check = (n: number) => {
    const weights = n === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
    const r = d.slice(0, n).reduce((acc, x, i) => acc + x * (weights[i] as number), 0) % 11;
    return r < 2 ? 0 : 11 - r;
  };
  return check(12) === d[12] && check(13) === d[13];
}

/** Amounts in integer cents / thousandths, so the test does not share the code's decimal library. */
const cents = (n: number) => Math.round(n * 100);

describe('demo data', () => {
  let s: TestServer;
  let accountId: string;
  let key: string;
  let testKey: string;
  const listAll = async (path: string, k = key) => {
    const out: any[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const sep = path.includes('?') ? '&' : '?';
      const r: TestResponse = await s.request('GET', `${path}${sep}limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key: k });
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
      out.push(...r.body.data);
      cursor = r.body.pagination.next_cursor;
      if (!cursor) return out;
    }
    assert.fail(`${path} did not end`);
  };

  before(async () => {
    s = await startTestServer();
    // Generous limits: the test walks whole lists page by page.
    const created = await s.createAccountWithKey({
      rateLimits: {
        burst_per_second: 100_000,
        requests_per_minute_read: 100_000,
        requests_per_minute_write: 100_000,
        requests_per_day_total: 1_000_000,
      },
    });
    accountId = created.account.id;
    key = created.key;
    testKey = (await s.createKey(accountId, { test: true })).key;
    const live = await seedDemoData(s.database, accountId, 'live', { now: NOW });
    assert.deepEqual(live.counts, EXPECTED_COUNTS);
  });
  after(() => s.close());

  test('is deterministic for a given instant, with ids of its own per account and mode', () => {
    const a = buildDemoData(accountId, 'live', { now: NOW });
    assert.deepEqual(buildDemoData(accountId, 'live', { now: NOW }), a);
    const other = buildDemoData(randomUUID(), 'live', { now: NOW });
    const test = buildDemoData(accountId, 'test', { now: NOW });
    assert.deepEqual(
      other.customers.map((c) => c.full_name),
      a.customers.map((c) => c.full_name),
    );
    const ids = new Set(a.customers.map((c) => c.id));
    assert.ok(other.customers.every((c) => !ids.has(c.id)));
    assert.ok(test.customers.every((c) => !ids.has(c.id)));
    for (const [name, records] of Object.entries(a))
      assert.equal(records.length, EXPECTED_COUNTS[name as keyof typeof EXPECTED_COUNTS], name);
  });

  test('every resource is served, quotes and the deleted product excepted', async () => {
    const served: Record<string, number> = {};
    for (const path of [
      'customers',
      'sales',
      'suppliers',
      'expenses',
      'appointments',
      'services',
      'products',
      'inventory',
      'bank-accounts',
      'deals',
    ]) {
      served[path] = (await listAll(`/v1/${path}`)).length;
    }
    assert.deepEqual(served, {
      customers: 60,
      sales: 75,
      suppliers: 13,
      expenses: 46,
      appointments: 60,
      services: 10,
      products: 14,
      inventory: 16,
      'bank-accounts': 4,
      deals: 24,
    });
    const stages = await s.request('GET', '/v1/deals/stages', { key });
    assert.deepEqual(
      stages.body.data.map((st: any) => st.position),
      [1, 2, 3, 4, 5, 6],
    );
    assert.deepEqual(stages.body.data.map((st: any) => st.milestone).filter(Boolean), ['won', 'lost']);
    assert.ok(stages.body.data.every((st: any) => /^#[0-9A-F]{6}$/.test(st.color)));
  });

  test('looks Brazilian: valid CPFs and CNPJs, +55 phones, states, pix keys, BRL accounts', async () => {
    const customers = await listAll('/v1/customers');
    const documents = customers.map((c) => c.document).filter(Boolean);
    assert.ok(documents.length > 20);
    assert.ok(documents.every(validCpf), 'customer CPFs have valid check digits');
    assert.ok(
      customers.every((c) => c.email || c.phone),
      'a phone whenever there is no e-mail',
    );
    assert.ok(customers.filter((c) => c.phone).every((c) => /^\+55 \d{2} 9\d{4}-\d{4}$/.test(c.phone)));
    assert.ok(customers.every((c) => /^[A-Z]{2}$/.test(c.address_state) && /^\d{5}-\d{3}$/.test(c.address_zip_code)));
    assert.ok(customers.some((c) => c.address_city === 'São Paulo') && customers.some((c) => c.address_city === 'Belo Horizonte'));

    const suppliers = await listAll('/v1/suppliers');
    const companies = suppliers.filter((x) => !x.is_employee);
    assert.ok(companies.length >= 5 && companies.every((x) => validCnpj(x.document_number)));
    assert.ok(suppliers.filter((x) => x.is_employee).every((x) => validCpf(x.document_number)));
    const pixTypes = new Set(suppliers.flatMap((x) => x.pix_keys.map((k: any) => k.type)));
    for (const type of ['cpf', 'cnpj', 'email', 'phone', 'random']) assert.ok(pixTypes.has(type), type);

    const banks = await listAll('/v1/bank-accounts');
    assert.ok(banks.every((b) => b.currency === 'BRL'));
    assert.deepEqual(
      banks
        .map((b) => b.bank_name)
        .filter(Boolean)
        .sort(),
      ['Caixa Econômica Federal', 'Itaú Unibanco', 'Nubank'],
    );
    const names = (await listAll('/v1/services')).map((x) => x.name);
    assert.ok(names.includes('Banho e tosa') && names.includes('Corte feminino'));
    assert.ok((await listAll('/v1/products')).some((p) => p.name === 'Ração premium 15kg'));
  });

  test('sales follow the calculation rules, with items, histories and numbers 1..N', async () => {
    const sales = await listAll('/v1/sales');
    assert.ok(sales.some((x) => x.transaction_type === 'order') && sales.some((x) => x.transaction_type === 'sale'));
    for (const sale of sales.slice(0, 30)) {
      const r = await s.request('GET', `/v1/sales/${sale.id}?include=items,status_history`, { key });
      const { items, status_history: history } = r.body.data;
      assert.ok(items.length >= 1);
      for (const item of items) {
        const subtotal = Math.round((Math.round(item.quantity * 1000) * cents(item.unit_price)) / 1000);
        assert.equal(cents(item.subtotal), subtotal, 'item subtotal = quantity × unit_price');
        const pct = item.discount_percentage ? Math.round((subtotal * item.discount_percentage) / 100) : 0;
        assert.equal(cents(item.total_amount), Math.max(0, subtotal - pct - cents(item.discount_amount ?? 0)));
      }
      const sum = (field: string) => items.reduce((acc: number, i: any) => acc + cents(i[field]), 0);
      assert.equal(cents(sale.subtotal), sum('subtotal'));
      assert.equal(cents(sale.total_amount), sum('total_amount') + cents(sale.delivery_fee ?? 0));
      assert.equal(history[0].old_status, null);
      assert.equal(history.at(-1).new_status, sale.status);
    }
    const numbers = (
      await s.db
        .selectFrom('transactions')
        .select('transaction_number')
        .where('team_id', '=', accountId)
        .where('mode', '=', 'live')
        .execute()
    )
      .map((t) => Number(t.transaction_number))
      .sort((a, b) => a - b);
    assert.deepEqual(
      numbers,
      Array.from({ length: 80 }, (_, i) => i + 1),
    );
    const posted = await s.request('POST', '/v1/sales', {
      key,
      body: { items: [{ catalog_type: 'service', catalog_item_id: randomUUID(), quantity: 1, unit_price: 95 }] },
      headers: { 'idempotency-key': randomUUID() },
    });
    assert.equal(posted.status, 201);
    assert.equal(posted.body.data.transaction_number, '81');
  });

  test('recurring expenses generated expenses; deals sit in the funnel', async () => {
    const expenses = await listAll('/v1/expenses');
    const generated = expenses.filter((e) => e.recurring_expense_id);
    assert.ok(generated.length >= 12 && generated.every((e) => e.is_recurring === true));
    const one = await s.request('GET', `/v1/expenses/${generated[0].id}?include=recurring`, { key });
    assert.equal(one.body.data.recurring.recurrence_frequency, 'monthly');
    assert.ok(expenses.some((e) => e.total_installments === 3));

    const deals = await listAll('/v1/deals');
    const stages = (await s.request('GET', '/v1/deals/stages', { key })).body.data;
    const milestone = new Map(stages.map((st: any) => [st.id, st.milestone]));
    assert.ok(deals.every((d) => milestone.has(d.stage_id)));
    assert.ok(deals.every((d) => (milestone.get(d.stage_id) ?? 'open') === d.status));
    assert.ok(deals.filter((d) => d.status === 'won').every((d) => d.won_transaction_id && d.closed_at));
    assert.ok(deals.filter((d) => d.status === 'lost').every((d) => d.lost_reason));

    const appointments = await listAll('/v1/appointments');
    const today = NOW.toISOString().slice(0, 10);
    assert.ok(appointments.some((a) => a.appointment_date > today) && appointments.some((a) => a.status === 'completed'));
    assert.ok(appointments.every((a) => a.end_time > a.start_time));
  });

  test('the test-mode data is seeded separately and seen by test keys only', async () => {
    assert.equal((await listAll('/v1/customers', testKey)).length, 0);
    const result = await seedDemoData(s.database, accountId, 'test', { now: NOW });
    assert.deepEqual(result.counts, EXPECTED_COUNTS);
    assert.equal((await listAll('/v1/customers', testKey)).length, 60);
    assert.equal((await listAll('/v1/customers')).length, 60);
  });

  test('balcao demo creates its account and both modes in one transaction', async () => {
    const { id } = await createDemoAccount(
      s.database,
      { name: 'Demo', plan_code: 'enterprise', modules: [...MODULES], is_demo: true },
      { now: NOW },
    );
    const account = await s.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(account.is_demo, true);
    assert.deepEqual([...account.modules].sort(), [...MODULES].sort());
    for (const mode of ['live', 'test']) {
      const sales = await s.db
        .selectFrom('transactions')
        .select(s.db.fn.countAll().as('n'))
        .where('team_id', '=', id)
        .where('mode', '=', mode)
        .executeTakeFirstOrThrow();
      assert.equal(Number(sales.n), EXPECTED_COUNTS.sales, mode);
    }
  });
});
