// Sales over HTTP (SPEC 2.2, 3; DECISIONS B.4–B.6): exact totals, the items in the POST answer,
// status history, PATCH limited to six fields, cancellation, transaction numbers under
// concurrency and after imported ones, and the tenant wall.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { MAX_ITEMS_AS_VALUES } from '../src/resources/writes/transaction-number.ts';
import { item, writer } from './helpers/write-fixtures.ts';
import { StatementRecorder } from './helpers/statement-recorder.ts';

describe('sales writes', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  const post = (key: string, body: unknown) => s.request('POST', '/v1/sales', { key, body });
  const history = async (key: string, id: string) =>
    (await s.request('GET', `/v1/sales/${id}?include=status_history`, { key })).body.data.status_history.map(
      (h: { old_status: string | null; new_status: string }) => [h.old_status, h.new_status],
    );

  it('keeps item notes as sent: stored with a lone surrogate as U+FFFD (as in any text field), a written backslash kept', async () => {
    const { key } = await writer(s);
    const notes = ['a\ud800b', 'c\udc00', 'emoji \ud83d\ude00 and a backslash \\ud800', '"quoted", \n new line'];
    const res = await post(key, { items: notes.map((n) => item({ notes: n })) });
    assert.equal(res.status, 201, res.text);
    const expected = ['a\ufffdb', 'c\ufffd', notes[2], notes[3]];
    const read = await s.request('GET', `/v1/sales/${res.body.data.id}?include=items`, { key });
    assert.equal(read.status, 200);
    assert.deepEqual(
      read.body.data.items.map((i: { notes: string }) => i.notes),
      expected,
    );
  });

  it('stores items alike whether they travel as parameters or, past MAX_ITEMS_AS_VALUES, as one JSON parameter', async () => {
    const { key } = await writer(s);
    for (const count of [MAX_ITEMS_AS_VALUES, MAX_ITEMS_AS_VALUES + 1]) {
      const items = Array.from({ length: count }, (_, i) =>
        item({ quantity: i + 1, unit_price: 0.1, notes: i === 0 ? 'x\ud800' : `n${i}` }),
      );
      const res = await post(key, { items });
      assert.equal(res.status, 201, res.text);
      const read = await s.request('GET', `/v1/sales/${res.body.data.id}?include=items`, { key });
      assert.equal(read.body.data.items.length, count);
      assert.deepEqual(
        read.body.data.items.map((i: { notes: string; quantity: number; subtotal: number; catalog_item_id: string }) => [
          i.notes,
          i.quantity,
          i.subtotal,
          i.catalog_item_id,
        ]),
        items.map((i, n) => [n === 0 ? 'x\ufffd' : `n${n}`, n + 1, Number(((n + 1) * 0.1).toFixed(2)), i.catalog_item_id]),
      );
    }
  });

  it('creates a sale with exact totals, its items in body order and no status_history', async () => {
    const { key } = await writer(s);
    const body = {
      items: [
        item({ quantity: 3, unit_price: 19.99 }),
        item({ quantity: 3, unit_price: 1.1, catalog_type: 'service' }),
        item({ quantity: 1, unit_price: 0.1 }),
        item({ quantity: 1, unit_price: 0.2, catalog_type: 'package' }),
        item({ quantity: 100, unit_price: 4.35 }),
        item({ quantity: 1, unit_price: 33.33, discount_percentage: 10, notes: 'promo' }),
        item({ quantity: 1, unit_price: 5, discount_amount: 9 }),
      ],
      delivery_fee: 0.07,
      subtotal: 1,
      total_amount: 2,
      discount_amount: 3,
      transaction_number: '999',
    };
    const res = await post(key, body);
    assert.equal(res.status, 201, res.text);
    const sale = res.body.data;
    assert.deepEqual(
      sale.items.map((i: { subtotal: number; total_amount: number }) => [i.subtotal, i.total_amount]),
      [
        [59.97, 59.97],
        [3.3, 3.3],
        [0.1, 0.1],
        [0.2, 0.2],
        [435, 435],
        [33.33, 30],
        [5, 0],
      ],
    );
    assert.equal(sale.subtotal, 536.9); // 59.97 + 3.30 + 0.10 + 0.20 + 435 + 33.33 + 5
    assert.equal(sale.total_amount, 528.64); // items 528.57 + delivery 0.07
    assert.equal(sale.discount_amount, 8.33);
    assert.equal(sale.delivery_fee, 0.07);
    assert.equal(sale.transaction_number, '1');
    assert.equal(sale.transaction_type, 'sale');
    assert.equal(sale.status, 'pending');
    assert.equal(sale.is_active, true);
    assert.equal(sale.updated_at, null);
    assert.equal('status_history' in sale, false);
    assert.deepEqual(
      sale.items.map((i: { catalog_item_id: string }) => i.catalog_item_id),
      body.items.map((i) => i.catalog_item_id),
    );
    assert.equal(sale.items[5].notes, 'promo');
    assert.equal(sale.items[5].discount_percentage, 10);
    assert.equal(sale.items[6].discount_amount, 9);
    assert.match(res.text, /"subtotal":59\.97,"total_amount":59\.97/);
    // GET by id returns the same record, items in the same order.
    const got = await s.request('GET', `/v1/sales/${sale.id}?include=items`, { key });
    assert.deepEqual(got.body.data, sale);
  });

  it('answers a sent sale_date as the database prints it, and numbers the sale, whichever way it is written', async () => {
    const { key } = await writer(s);
    // The answer is made before the database answers (decisions.md): offsets, no seconds, lowercase, no colon,
    // microseconds. More than 6 fractional digits (rounded by PostgreSQL) and a 3-digit year are read back.
    const cases: [string, string][] = [
      ['2026-03-01T10:00:00-03:00', '2026-03-01T13:00:00.000Z'],
      ['2026-03-01T10:00:00.123456Z', '2026-03-01T10:00:00.123Z'],
      ['2026-03-01T23:30', '2026-03-01T23:30:00.000Z'],
      ['2026-03-01t01:02:03+0530', '2026-02-28T19:32:03.000Z'],
      ['2026-12-31T23:59:59.9999996Z', '2027-01-01T00:00:00.000Z'],
      ['0999-01-01T00:00:00Z', '0999-01-01T00:00:00.000Z'],
    ];
    const numbers: string[] = [];
    for (const [sent, printed] of cases) {
      const res = await post(key, { items: [item(), item({ catalog_type: 'service' })], sale_date: sent });
      assert.equal(res.status, 201, sent);
      assert.equal(res.body.data.sale_date, printed, sent);
      numbers.push(res.body.data.transaction_number);
      const got = await s.request('GET', `/v1/sales/${res.body.data.id}?include=items`, { key });
      assert.deepEqual(got.body.data, res.body.data, sent);
    }
    assert.deepEqual(numbers, ['1', '2', '3', '4', '5', '6']);
  });

  it('rounds unit prices half-up to cents and quantities to 3 places', async () => {
    const { key } = await writer(s);
    const res = await post(key, { items: [item({ quantity: 1.0005, unit_price: 1.005 }), item({ quantity: 0.333, unit_price: 3 })] });
    assert.equal(res.status, 201, res.text);
    const [a, b] = res.body.data.items;
    assert.equal(a.quantity, 1.001);
    assert.equal(a.unit_price, 1.01);
    assert.equal(a.subtotal, 1.01); // 1.001 × 1.01 = 1.01101
    assert.equal(b.subtotal, 1); // 0.999 → 1.00
    assert.equal(res.body.data.total_amount, 2.01);
  });

  it('takes customer, type, status, dates and free fields from the body', async () => {
    const { key } = await writer(s);
    const customer = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Bia', phone: '1199' } });
    const res = await post(key, {
      items: [item()],
      customer_id: customer.body.data.id,
      transaction_type: 'order',
      status: 'completed',
      sale_date: '2026-03-04T05:06:07.089Z',
      delivery_date: '2026-03-10',
      payment_method: 'pix',
      payment_status: 'paid',
      order_code: 'ERP-1',
      notes: 'n',
    });
    assert.equal(res.status, 201, res.text);
    const d = res.body.data;
    assert.equal(d.customer_id, customer.body.data.id);
    assert.equal(d.transaction_type, 'order');
    assert.equal(d.sale_date, '2026-03-04T05:06:07.089Z');
    assert.equal(d.delivery_date, '2026-03-10');
    assert.deepEqual([d.payment_method, d.payment_status, d.order_code, d.notes], ['pix', 'paid', 'ERP-1', 'n']);
    // Only the final state of a creation is recorded.
    assert.deepEqual(await history(key, d.id), [[null, 'completed']]);
  });

  it('records history on creation, on each status change, and not when unchanged', async () => {
    const { key } = await writer(s);
    const { id } = (await post(key, { items: [item()] })).body.data;
    assert.deepEqual(await history(key, id), [[null, 'pending']]);
    const same = await s.request('PATCH', `/v1/sales/${id}`, { key, body: { status: 'pending' } });
    assert.equal(same.status, 200);
    assert.notEqual(same.body.data.updated_at, null);
    assert.deepEqual(await history(key, id), [[null, 'pending']]);
    const changed = await s.request('PATCH', `/v1/sales/${id}`, { key, body: { status: 'completed', payment_status: 'paid' } });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.data.status, 'completed');
    assert.equal(changed.body.data.payment_status, 'paid');
    assert.deepEqual(await history(key, id), [
      [null, 'pending'],
      ['pending', 'completed'],
    ]);
  });

  it('chains the history of concurrent status changes: each entry starts where the one before it ended', async () => {
    // Each PATCH is one statement that locks the row it changes (engines/change-statement.ts): under concurrency every
    // change still reads the status the previous one left, and every one gets a version of its own.
    const { key } = await writer(s);
    const { id } = (await post(key, { items: [item()] })).body.data;
    const statuses = ['completed', 'pending', 'completed', 'pending', 'completed', 'pending', 'completed', 'pending'];
    const answers = await Promise.all(statuses.map((status) => s.request('PATCH', `/v1/sales/${id}`, { key, body: { status } })));
    for (const answer of answers) assert.equal(answer.status, 200, answer.text);
    assert.equal(new Set(answers.map((a) => a.headers.get('etag'))).size, statuses.length);
    const entries = (await history(key, id)) as [string | null, string][];
    for (let i = 1; i < entries.length; i++) assert.equal(entries[i]![0], entries[i - 1]![1], JSON.stringify(entries));
    assert.ok(entries.every(([from, to]) => from !== to));
    const last = (await s.request('GET', `/v1/sales/${id}`, { key })).body.data.status;
    assert.equal(entries.at(-1)![1], last);
  });

  it('answers 404 to a PATCH and a DELETE of a sale of another account, and changes nothing there', async () => {
    const owner = await writer(s);
    const other = await writer(s);
    const { id } = (await post(owner.key, { items: [item()] })).body.data;
    assert.equal((await s.request('PATCH', `/v1/sales/${id}`, { key: other.key, body: { status: 'completed' } })).status, 404);
    assert.equal((await s.request('DELETE', `/v1/sales/${id}`, { key: other.key })).status, 404);
    const read = (await s.request('GET', `/v1/sales/${id}?include=status_history`, { key: owner.key })).body.data;
    assert.deepEqual([read.status, read.updated_at, read.status_history.length], ['pending', null, 1]);
  });

  it('changes only the six PATCH fields and recomputes the total on a delivery_fee change', async () => {
    const { key } = await writer(s);
    const created = (await post(key, { items: [item({ quantity: 3, unit_price: 19.99 })], order_code: 'A' })).body.data;
    const res = await s.request('PATCH', `/v1/sales/${created.id}`, {
      key,
      body: {
        delivery_fee: 10.01,
        notes: 'entregar à tarde',
        delivery_date: '2026-12-01',
        payment_method: 'cash',
        items: [],
        customer_id: randomUUID(),
        order_code: 'B',
        total_amount: 1,
        subtotal: 1,
        transaction_number: '77',
        transaction_type: 'order',
        is_active: false,
      },
    });
    assert.equal(res.status, 200, res.text);
    const d = res.body.data;
    assert.equal(d.total_amount, 69.98);
    assert.equal(d.delivery_fee, 10.01);
    assert.equal(d.subtotal, 59.97);
    assert.deepEqual([d.notes, d.delivery_date, d.payment_method], ['entregar à tarde', '2026-12-01', 'cash']);
    assert.deepEqual([d.order_code, d.customer_id, d.transaction_number, d.transaction_type, d.is_active], ['A', null, '1', 'sale', true]);
    const items = (await s.request('GET', `/v1/sales/${created.id}?include=items`, { key })).body.data.items;
    assert.equal(items.length, 1);
    const cleared = await s.request('PATCH', `/v1/sales/${created.id}`, { key, body: { delivery_fee: null } });
    assert.equal(cleared.body.data.total_amount, 59.97);
    assert.equal(cleared.body.data.delivery_fee, null);
  });

  it('cancels on DELETE with one history entry, answers 204 every time, and keeps the record', async () => {
    const { key } = await writer(s);
    const { id } = (await post(key, { items: [item()] })).body.data;
    const first = await s.request('DELETE', `/v1/sales/${id}`, { key });
    assert.equal(first.status, 204);
    assert.equal(first.text, '');
    const again = await s.request('DELETE', `/v1/sales/${id}`, { key });
    assert.equal(again.status, 204);
    const got = await s.request('GET', `/v1/sales/${id}`, { key });
    assert.equal(got.status, 200);
    assert.equal(got.body.data.status, 'cancelled');
    assert.notEqual(got.body.data.updated_at, null);
    assert.deepEqual(await history(key, id), [
      [null, 'pending'],
      ['pending', 'cancelled'],
    ]);
    const listed = await s.request('GET', '/v1/sales?filter[status][eq]=cancelled', { key });
    assert.deepEqual(
      listed.body.data.map((r: { id: string }) => r.id),
      [id],
    );
  });

  it('gives 20 concurrent sales 20 distinct consecutive transaction numbers', async () => {
    const { key } = await writer(s);
    const results = await Promise.all(Array.from({ length: 20 }, () => post(key, { items: [item()] })));
    assert.deepEqual(
      results.map((r) => r.status),
      Array(20).fill(201),
    );
    const numbers = results.map((r) => Number(r.body.data.transaction_number)).sort((a, b) => a - b);
    assert.deepEqual(
      numbers,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  it('numbers per tenant: another account and test mode count on their own', async () => {
    const a = await writer(s);
    const b = await writer(s);
    const aTest = await s.createKey(a.accountId, { test: true });
    await post(a.key, { items: [item()] });
    await post(a.key, { items: [item()] });
    assert.equal((await post(b.key, { items: [item()] })).body.data.transaction_number, '1');
    assert.equal((await post(aTest.key, { items: [item()] })).body.data.transaction_number, '1');
    assert.equal((await post(a.key, { items: [item()] })).body.data.transaction_number, '3');
  });

  it('continues after the largest stored number and skips numbers written behind its back', async () => {
    const { key, accountId } = await writer(s);
    // Rows written straight to the table, as an import leaves them (the importer also moves the counter).
    const stored = (n: string, type = 'sale') =>
      s.db.insertInto('transactions').values({ team_id: accountId, mode: 'live', transaction_type: type, transaction_number: n }).execute();
    await stored('41');
    await stored('ABC-900');
    await stored('7', 'quote');
    assert.equal((await post(key, { items: [item()] })).body.data.transaction_number, '42');
    await stored('43');
    await stored('60');
    assert.equal((await post(key, { items: [item()] })).body.data.transaction_number, '61');
    assert.equal((await post(key, { items: [item()] })).body.data.transaction_number, '62');
  });

  it('numbers a known tenant by its counter alone, and runs a sale again in full when the next number was taken', async () => {
    const recorder = new StatementRecorder(true);
    const own = await startTestServer({ plugin: recorder });
    try {
      const { key, accountId } = await writer(own);
      // The numbering statements a sale sent from the `from`-th statement on: 'full' creates the counter if need be
      // and jumps past stored numbers; 'known' only moves the counter on.
      const numbering = (from: number) =>
        recorder
          .texts(from)
          .filter((text) => text.includes('insert into "transactions"'))
          .map((text) => (text.includes('"created" as (insert into "tenant_counters"') ? 'full' : 'known'));
      const sale = async () => {
        const res = await own.request('POST', '/v1/sales', { key, body: { items: [item()] } });
        assert.equal(res.status, 201, res.text);
        return res.body.data.transaction_number;
      };
      let from = recorder.nodes.length;
      assert.deepEqual([await sale(), await sale()], ['1', '2']);
      assert.deepEqual(numbering(from), ['full', 'known']);
      // The next number taken behind the process's back (as an import's rows): the known-counter statement fails,
      // nothing of it commits, and the sale runs again in full, past the largest stored number.
      await own.db
        .insertInto('transactions')
        .values({ team_id: accountId, mode: 'live', transaction_type: 'sale', transaction_number: '3' })
        .execute();
      from = recorder.nodes.length;
      assert.equal(await sale(), '4');
      assert.deepEqual(numbering(from), ['known', 'full']);
      from = recorder.nodes.length;
      assert.equal(await sale(), '5');
      assert.deepEqual(numbering(from), ['known']);
      // An atomic batch cannot run again on its own: its sale takes the full statement.
      from = recorder.nodes.length;
      const batch = await own.request('POST', '/v1/batch', {
        key,
        body: { atomic: true, operations: [{ method: 'POST', path: '/v1/sales', body: { items: [item()] } }] },
      });
      assert.equal(batch.status, 200, batch.text);
      assert.equal(batch.body.data[0].body.data.transaction_number, '6');
      assert.deepEqual(numbering(from), ['full']);
      // One row per number: the failed attempt left none behind.
      const numbers = await own.db
        .selectFrom('transactions')
        .select('transaction_number')
        .where('team_id', '=', accountId)
        .orderBy('transaction_number')
        .execute();
      assert.deepEqual(
        numbers.map((n) => n.transaction_number),
        ['1', '2', '3', '4', '5', '6'],
      );
    } finally {
      await own.close();
    }
  });

  it('answers 404 to PATCH and DELETE of unknown ids, other accounts, the other mode and non-sale transactions, changing nothing', async () => {
    const owner = await writer(s);
    const intruder = await writer(s);
    const ownerTest = await s.createKey(owner.accountId, { test: true });
    const { id } = (await post(owner.key, { items: [item()], notes: 'original' })).body.data;
    const quote = await s.db
      .insertInto('transactions')
      .values({ team_id: owner.accountId, mode: 'live', transaction_type: 'quote', status: 'open' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const attempts: [string, string][] = [
      [intruder.key, id],
      [ownerTest.key, id],
      [owner.key, String(quote.id)],
      [owner.key, randomUUID()],
      [owner.key, 'not-a-uuid'],
    ];
    for (const [key, target] of attempts) {
      const patch = await s.request('PATCH', `/v1/sales/${target}`, { key, body: { status: 'hacked', notes: 'x' } });
      assert.equal(patch.status, 404, patch.text);
      assert.match(patch.body.type, /\/not_found$/);
      assert.equal((await s.request('DELETE', `/v1/sales/${target}`, { key })).status, 404);
    }
    const got = (await s.request('GET', `/v1/sales/${id}?include=status_history`, { key: owner.key })).body.data;
    assert.deepEqual([got.status, got.notes, got.updated_at, got.status_history.length], ['pending', 'original', null, 1]);
    const q = await s.db.selectFrom('transactions').select(['status', 'updated_at']).where('id', '=', quote.id).executeTakeFirstOrThrow();
    assert.deepEqual([q.status, q.updated_at], ['open', null]);
  });

  it("refuses another account's customer with 422 not_found and creates nothing", async () => {
    const owner = await writer(s);
    const intruder = await writer(s);
    const theirs = (await s.request('POST', '/v1/customers', { key: owner.key, body: { full_name: 'Cliente', phone: '1' } })).body.data.id;
    const res = await post(intruder.key, { items: [item()], customer_id: theirs });
    assert.equal(res.status, 422);
    assert.deepEqual(
      res.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]),
      [['customer_id', 'not_found']],
    );
    assert.doesNotMatch(res.text, new RegExp(owner.accountId));
    assert.equal((await s.request('GET', '/v1/sales', { key: intruder.key })).body.data.length, 0);
    assert.equal((await s.request('GET', '/v1/sales', { key: owner.key })).body.data.length, 0);
  });
});
