// Every committed change of a served table is an event, whoever wrote it (docs/events.md, "Every writer"): an
// outside writer's inserts, updates, soft and hard deletes in every served table reach the feed and a webhook
// receiver once each, in commit order, with origin `outside`; a transaction that changes a sale and its items is
// one event; a rolled-back one is none; API writes and outside writes interleave in commit order, the API's with
// origin `api`. Both engines: on the embedded database the "outside" writer is the test's own handle on it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { captured } from './helpers/captured.ts';
import { type OutsideWriter, outsideWriter } from './helpers/outside-writer.ts';
import { until } from './helpers/poll.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { item } from './helpers/write-fixtures.ts';

const LOCAL = { BALCAO_WEBHOOK_ALLOW_PRIVATE: '1' };

interface FeedEvent {
  id: string;
  type: string;
  data: { object: Record<string, unknown>; previous_attributes: Record<string, unknown> | null };
  request_id: string | null;
  origin: { type: string; key_id?: string | null; request_id?: string | null };
}

/** Every event after `cursor`, forward, page by page; with the cursor to go on from. */
async function feed(s: TestServer, key: string, cursor?: string): Promise<{ events: FeedEvent[]; cursor: string }> {
  const events: FeedEvent[] = [];
  let next = cursor;
  for (;;) {
    const res = await s.request('GET', `/v1/events?sort=created_at&limit=100${next ? `&cursor=${next}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.data);
    next = res.body.pagination.next_cursor;
    if (!res.body.pagination.has_more) return { events, cursor: next as string };
  }
}

/** The events of `count` changes after `cursor`, once all of them are there. */
async function feedOf(s: TestServer, key: string, count: number, cursor?: string): Promise<FeedEvent[]> {
  await captured(s.database);
  return (await until(`${count} events in the feed`, () => feed(s, key, cursor), { done: (page) => page.events.length >= count })).events;
}

const q = (value: string) => `'${value.replaceAll("'", "''")}'`;

describe('change capture: every writer', () => {
  let s: TestServer;
  let outside: OutsideWriter;
  let key: string;
  let keyId: string;
  let account: string;
  before(async () => {
    s = await startTestServer({ env: LOCAL });
    outside = outsideWriter(s.database);
    const made = await s.createAccountWithKey();
    key = made.key;
    keyId = made.keyId;
    account = made.account.id;
  });
  after(async () => {
    await outside.close();
    await s.close();
  });

  /** `INSERT INTO table (team_id, mode, …) VALUES (account, 'live', …)` */
  const insert = (table: string, values: Record<string, string>) =>
    `INSERT INTO ${table} (team_id, mode, ${Object.keys(values).join(', ')}) VALUES (${q(account)}, 'live', ${Object.values(values).join(', ')})`;
  const where = (id: string) => `team_id = ${q(account)} AND mode = 'live' AND id = ${q(id)}`;

  it('makes one event per transaction and record, in commit order, for inserts, updates and deletes of every served table', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url: receiver.url, enabled_events: ['*'] } });
      assert.equal(hook.status, 201, hook.text);
      const start = (await feed(s, key)).cursor;
      const [customer, sale, quote, supplier, expense, appointment, service, product, stock, bank, stage, deal] = Array.from(
        { length: 12 },
        () => randomUUID(),
      ) as string[] as [string, string, string, string, string, string, string, string, string, string, string, string];
      const [item1, item2] = [randomUUID(), randomUUID()];
      const expected: [string, string][] = [];
      const step = async (events: [string, string][], ...statements: string[]) => {
        await outside.commit(...statements);
        expected.push(...events);
      };
      await step([['customer.created', customer]], insert('customers', { id: q(customer), full_name: q('Ana Souza') }));
      await step(
        [['customer.updated', customer]],
        `UPDATE customers SET full_name = 'Ana Lima', updated_at = now() WHERE ${where(customer)}`,
      );
      // A sale with its items and first history entry in one transaction: one creation.
      await step(
        [['sale.created', sale]],
        insert('transactions', {
          id: q(sale),
          transaction_type: q('sale'),
          status: q('pending'),
          customer_id: q(customer),
          total_amount: '20',
        }),
        ...[item1, item2].map((id) =>
          insert('transaction_items', {
            id: q(id),
            transaction_id: q(sale),
            catalog_type: q('product'),
            catalog_item_id: q(randomUUID()),
            quantity: '1',
            unit_price: '10',
            subtotal: '10',
            total_amount: '10',
          }),
        ),
        insert('transaction_status_history', { id: q(randomUUID()), transaction_id: q(sale), new_status: q('pending') }),
      );
      // Its items alone: the sale is updated, with nothing of its own changed.
      await step([['sale.updated', sale]], `UPDATE transaction_items SET quantity = 2 WHERE ${where(item1)}`);
      // The sale and an item in one transaction: one update.
      await step(
        [['sale.updated', sale]],
        `UPDATE transactions SET status = 'completed', total_amount = 30, updated_at = now() WHERE ${where(sale)}`,
        `UPDATE transaction_items SET total_amount = 20 WHERE ${where(item1)}`,
        insert('transaction_status_history', {
          id: q(randomUUID()),
          transaction_id: q(sale),
          old_status: q('pending'),
          new_status: q('completed'),
        }),
      );
      // A quote is no sale the API serves: no event.
      await step([], insert('transactions', { id: q(quote), transaction_type: q('quote') }));
      await step([['customer.deleted', customer]], `UPDATE customers SET is_active = false, updated_at = now() WHERE ${where(customer)}`);
      await step([['supplier.created', supplier]], insert('suppliers', { id: q(supplier), name: q('Distribuidora Sul') }));
      await step(
        [['expense.created', expense]],
        insert('expenses', {
          id: q(expense),
          expense_number: q('CX-1'),
          expense_type: q('expense'),
          description: q('Aluguel'),
          original_amount: '1200',
          final_amount: '1200',
          supplier_id: q(supplier),
        }),
      );
      await step(
        [['appointment.created', appointment]],
        insert('appointments', {
          id: q(appointment),
          customer_id: q(customer),
          appointment_date: q('2026-12-01'),
          start_time: q('09:00'),
          end_time: q('10:00'),
          status: q('scheduled'),
        }),
      );
      await step(
        [['appointment.updated', appointment]],
        `UPDATE appointments SET status = 'confirmed', updated_at = now() WHERE ${where(appointment)}`,
      );
      await step([['service.created', service]], insert('services', { id: q(service), name: q('Corte'), duration_minutes: '30' }));
      await step(
        [['product.created', product]],
        insert('catalog_items', { id: q(product), name: q('Ração 10 kg'), selling_price: '99.9' }),
      );
      await step(
        [['product.updated', product]],
        `UPDATE catalog_items SET selling_price = 89.9, updated_at = now() WHERE ${where(product)}`,
      );
      await step([['inventory.created', stock]], insert('inventory_items', { id: q(stock), name: q('Ração 10 kg'), current_stock: '5' }));
      await step([['inventory.updated', stock]], `UPDATE inventory_items SET current_stock = 4, updated_at = now() WHERE ${where(stock)}`);
      await step([['bank_account.created', bank]], insert('bank_accounts', { id: q(bank), account_name: q('Caixa') }));
      await step(
        [['deal.created', deal]],
        insert('deal_stages', { id: q(stage), name: q('Novo'), position: '1' }),
        insert('deals', { id: q(deal), customer_id: q(customer), stage_id: q(stage), status: q('open'), origin_channel: q('whatsapp') }),
      );
      // Rolled back: nothing.
      await outside.rollBack(insert('customers', { id: q(randomUUID()), full_name: q('Nunca') }));
      // Hard deletes: the record as it was last served.
      await step(
        [
          ['expense.deleted', expense],
          ['supplier.deleted', supplier],
        ],
        `DELETE FROM expenses WHERE ${where(expense)}`,
        `DELETE FROM suppliers WHERE ${where(supplier)}`,
      );
      await step([['product.deleted', product]], `UPDATE catalog_items SET deleted_at = now() WHERE ${where(product)}`);
      await step(
        [['sale.deleted', sale]],
        `DELETE FROM transaction_items WHERE team_id = ${q(account)} AND transaction_id = ${q(sale)}`,
        `DELETE FROM transaction_status_history WHERE team_id = ${q(account)} AND transaction_id = ${q(sale)}`,
        `DELETE FROM transactions WHERE ${where(sale)}`,
      );

      const events = await feedOf(s, key, expected.length, start).catch(async (err) => {
        const got = (await feed(s, key, start)).events.map((e) => [e.type, e.data.object.id]);
        assert.deepEqual(got, expected, String(err));
        throw err;
      });
      assert.deepEqual(
        events.map((e) => [e.type, e.data.object.id]),
        expected,
      );
      for (const e of events) {
        assert.deepEqual(e.origin, { type: 'outside' });
        assert.equal(e.request_id, null);
      }
      const byType = (type: string, index = 0) => events.filter((e) => e.type === type)[index] as FeedEvent;
      assert.deepEqual(byType('customer.updated').data.previous_attributes, { full_name: 'Ana Souza' });
      assert.deepEqual(byType('sale.updated', 0).data.previous_attributes, {}, 'its items alone changed');
      assert.deepEqual(byType('sale.updated', 1).data.previous_attributes, { status: 'pending', total_amount: 20 });
      assert.equal(byType('sale.deleted').data.object.status, 'completed', 'the sale as it was last served');
      assert.equal(byType('customer.deleted').data.object.is_active, false);
      assert.deepEqual(byType('inventory.updated').data.previous_attributes, { current_stock: 5 });
      assert.equal(byType('product.deleted').data.object.selling_price, 89.9);
      // data.object is the record exactly as GET returns it.
      for (const [type, path] of [
        ['appointment.updated', 'appointments'],
        ['inventory.updated', 'inventory'],
        ['bank_account.created', 'bank-accounts'],
        ['deal.created', 'deals'],
        ['service.created', 'services'],
      ] as const) {
        const object = byType(type).data.object;
        const read = await s.request('GET', `/v1/${path}/${object.id}`, { key });
        assert.equal(read.status, 200, read.text);
        assert.deepEqual(object, read.body.data, type);
      }
      // The webhook endpoint gets each of them (at least once, in no guaranteed order).
      await receiver.until((r) => new Set(r.map((x) => x.id)).size >= events.length, 30_000);
      assert.deepEqual(new Set(receiver.received.map((r) => r.id)), new Set(events.map((e) => e.id)));
    } finally {
      await receiver.close();
    }
  });

  it('orders API writes and outside writes by commit, each with its origin', async () => {
    const start = (await feed(s, key)).cursor;
    const expected: { name: string; origin: string; requestId?: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await s.request('POST', '/v1/customers', { key, body: { full_name: `API ${i}`, email: `api${i}@example.com` } });
      assert.equal(res.status, 201, res.text);
      expected.push({ name: `API ${i}`, origin: 'api', requestId: res.headers.get('x-request-id') ?? '' });
      await outside.commit(insert('customers', { id: q(randomUUID()), full_name: q(`Balcão ${i}`) }));
      expected.push({ name: `Balcão ${i}`, origin: 'outside' });
    }
    // A batch's operations carry the batch's request.
    const batch = await s.request('POST', '/v1/batch', {
      key,
      body: { atomic: true, operations: [{ method: 'POST', path: '/v1/sales', body: { items: [item()] } }] },
    });
    assert.equal(batch.status, 200, batch.text);
    const events = await feedOf(s, key, expected.length + 1, start);
    assert.deepEqual(
      events.slice(0, expected.length).map((e) => [e.data.object.full_name, e.origin.type]),
      expected.map((e) => [e.name, e.origin]),
    );
    for (const [i, e] of expected.entries()) {
      const event = events[i] as FeedEvent;
      if (e.origin === 'api') {
        assert.deepEqual(event.origin, { type: 'api', key_id: keyId, request_id: e.requestId });
        assert.equal(event.request_id, e.requestId);
      }
    }
    const sale = events[expected.length] as FeedEvent;
    assert.equal(sale.type, 'sale.created');
    assert.deepEqual(sale.origin, { type: 'api', key_id: keyId, request_id: batch.headers.get('x-request-id') });
  });

  it('has a write answered by the API in the feed for the next request', async () => {
    let { cursor } = await feed(s, key);
    for (let i = 0; i < 10; i++) {
      const res = await s.request('POST', '/v1/suppliers', { key, body: { name: `Fornecedor ${i}` } });
      assert.equal(res.status, 201, res.text);
      const page = await feed(s, key, cursor);
      assert.deepEqual(
        page.events.map((e) => e.data.object.id),
        [res.body.data.id],
      );
      cursor = page.cursor;
    }
  });

  it('wakes a long poll on an outside change', async () => {
    const { cursor } = await feed(s, key);
    const id = randomUUID();
    const held = s.request('GET', `/v1/events?sort=created_at&wait=20&cursor=${cursor}`, { key });
    // The poll is held (its first look found nothing) before the change commits, or finds it at once: either way it answers with it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await outside.commit(insert('customers', { id: q(id), full_name: q('Acordou') }));
    const res = await held;
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.data.map((e: FeedEvent) => e.data.object.id),
      [id],
    );
  });

  it('makes no event of an import, and readiness reports the capture', async () => {
    const { cursor } = await feed(s, key);
    // Marked as `balcao import` marks its transaction: the logical message, and the account's mark row (Citus).
    await outside.commit(
      `SELECT balcao_mark_origin('{"import":true}')`,
      insert('capture_marks', { origin: q('{"import":true}') }),
      insert('customers', { id: q(randomUUID()), full_name: q('Importado') }),
    );
    const marker = randomUUID();
    await outside.commit(insert('customers', { id: q(marker), full_name: q('Depois') }));
    const events = await feedOf(s, key, 1, cursor);
    assert.deepEqual(
      events.map((e) => e.data.object.id),
      [marker],
    );
    const ready = await s.request('GET', '/health/ready');
    assert.equal(ready.body.capture.state, 'capturing');
    assert.equal(typeof ready.body.capture.lag_seconds, 'number');
  });
});
