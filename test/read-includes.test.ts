// Includes on GET by id: sale items (created_at ascending, then id) and status history
// (chronological), an expense's recurrence (object or null); absent unless asked for.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { ISO_MS, UNLIMITED, insertRow, insertRows } from './helpers/read-data.ts';

let s: TestServer;
let key: string;
let tenant: { accountId: string; mode: 'live' };

before(async () => {
  s = await startTestServer();
  const created = await s.createAccountWithKey(UNLIMITED);
  key = created.key;
  tenant = { accountId: created.account.id, mode: 'live' };
});
after(async () => s?.close());

const get = (path: string) => s.request('GET', path, { key });
const ITEM_FIELDS = [
  'id',
  'catalog_type',
  'catalog_item_id',
  'quantity',
  'unit_price',
  'discount_amount',
  'discount_percentage',
  'subtotal',
  'total_amount',
  'notes',
  'created_at',
];
const HISTORY_FIELDS = ['id', 'old_status', 'new_status', 'change_reason', 'created_at'];

test('sale items come by created_at ascending then id, history chronologically; internal columns never show', async () => {
  const sale = await insertRow(s.db, 'transactions', tenant, { status: 'completed' });
  const other = await insertRow(s.db, 'transactions', tenant, {});
  const t = (m: number) => new Date(Date.UTC(2026, 0, 1, 12, m));
  const items = await insertRows(s.db, 'transaction_items', tenant, [
    { transaction_id: sale.id, created_at: t(5), quantity: 3, unit_price: 19.99, subtotal: 59.97, total_amount: 59.97, notes: 'c' },
    {
      transaction_id: sale.id,
      created_at: t(1),
      quantity: 1.5,
      unit_price: 10,
      subtotal: 15,
      total_amount: 14,
      discount_amount: 1,
      notes: 'a',
    },
    { transaction_id: sale.id, created_at: t(1), quantity: 2, unit_price: 10, subtotal: 20, total_amount: 20, notes: 'b' },
    { transaction_id: other.id, created_at: t(0) },
  ]);
  await insertRows(s.db, 'transaction_status_history', tenant, [
    {
      transaction_id: sale.id,
      old_status: 'pending',
      new_status: 'completed',
      change_reason: 'pago',
      created_at: t(9),
      created_by: randomUUID(),
    },
    { transaction_id: sale.id, old_status: null, new_status: 'pending', created_at: t(0) },
    { transaction_id: other.id, new_status: 'pending', created_at: t(0) },
  ]);

  const res = await get(`/v1/sales/${sale.id}?include=items,status_history`);
  assert.equal(res.status, 200);
  const sameTime = [items[1]!, items[2]!].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  assert.deepEqual(
    res.body.data.items.map((i: { id: string }) => i.id),
    [...sameTime.map((i) => i.id), items[0]!.id],
  );
  for (const item of res.body.data.items) {
    assert.deepEqual(Object.keys(item), ITEM_FIELDS);
    assert.match(item.created_at, ISO_MS);
  }
  const first = res.body.data.items.find((i: { notes: string }) => i.notes === 'c');
  assert.equal(first.quantity, 3);
  assert.equal(first.unit_price, 19.99);
  assert.equal(first.subtotal, 59.97);
  assert.deepEqual(
    res.body.data.status_history.map((h: { new_status: string; old_status: string | null }) => [h.old_status, h.new_status]),
    [
      [null, 'pending'],
      ['pending', 'completed'],
    ],
  );
  for (const h of res.body.data.status_history) assert.deepEqual(Object.keys(h), HISTORY_FIELDS);
  assert.ok(!res.text.includes('team_id') && !res.text.includes('transaction_id') && !res.text.includes('created_by'));
});

test('includes are absent unless asked for, unknown values are ignored, and lists carry them only when asked', async () => {
  const sale = await insertRow(s.db, 'transactions', tenant, {});
  await insertRow(s.db, 'transaction_items', tenant, { transaction_id: sale.id });
  const plain = await get(`/v1/sales/${sale.id}`);
  assert.ok(!('items' in plain.body.data) && !('status_history' in plain.body.data));
  const onlyItems = await get(`/v1/sales/${sale.id}?include=items,bogus,,recurring`);
  assert.equal(onlyItems.status, 200);
  assert.equal(onlyItems.body.data.items.length, 1);
  assert.ok(!('status_history' in onlyItems.body.data) && !('recurring' in onlyItems.body.data));
  const empty = await get(`/v1/sales/${sale.id}?include=status_history`);
  assert.deepEqual(empty.body.data.status_history, []);
  const list = await get('/v1/sales?include=items,status_history');
  assert.equal(list.status, 200);
  // Lists take includes too (issue 49): every record carries them; without `include`, none does.
  for (const row of list.body.data) assert.ok(Array.isArray(row.items) && Array.isArray(row.status_history));
  const plainList = await get('/v1/sales');
  for (const row of plainList.body.data) assert.ok(!('items' in row) && !('status_history' in row));
  const projected = await get(`/v1/sales/${sale.id}?include=items&fields=status`);
  assert.deepEqual(Object.keys(projected.body.data), ['id', 'status', 'items']);
});

test('expense include=recurring is the recurrence object, null without one, absent without the include', async () => {
  const rec = await insertRow(s.db, 'recurring_expenses', tenant, {
    recurrence_frequency: 'monthly',
    recurrence_interval: 2,
    end_date: '2026-12-31',
    internal_notes: 'x',
  });
  const withRec = await insertRow(s.db, 'expenses', tenant, { recurring_expense_id: rec.id, is_recurring: true });
  const without = await insertRow(s.db, 'expenses', tenant, {});
  // A recurrence of another account is not visible through an expense that names it.
  const stranger = await s.createAccount();
  const theirs = await insertRow(s.db, 'recurring_expenses', { accountId: stranger.id, mode: 'live' }, {});
  const dangling = await insertRow(s.db, 'expenses', tenant, { recurring_expense_id: theirs.id });

  const res = await get(`/v1/expenses/${withRec.id}?include=recurring`);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data.recurring, {
    id: rec.id,
    expense_template_id: rec.expense_template_id,
    recurrence_frequency: 'monthly',
    recurrence_interval: 2,
    start_date: '2026-01-01',
    end_date: '2026-12-31',
    next_generation_date: '2026-02-01',
    last_generated_expense_id: null,
    is_active: true,
    created_at: rec.created_at as string,
  });
  assert.equal((await get(`/v1/expenses/${without.id}?include=recurring`)).body.data.recurring, null);
  assert.equal((await get(`/v1/expenses/${dangling.id}?include=recurring`)).body.data.recurring, null);
  assert.ok(!('recurring' in (await get(`/v1/expenses/${withRec.id}`)).body.data));
  const projected = await get(`/v1/expenses/${withRec.id}?include=recurring&fields=description`);
  assert.deepEqual(Object.keys(projected.body.data), ['id', 'description', 'recurring']);
  assert.equal(projected.body.data.recurring.id, rec.id);
});
