// Customers, suppliers and expenses over HTTP (SPEC 2.1, 2.3, 2.4, 3; DECISIONS B.3, B.7): create,
// PATCH, soft DELETE that keeps the record, server-owned fields, references and the tenant wall.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { assertFieldError, writer } from './helpers/write-fixtures.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const expenseBody = (extra: Record<string, unknown> = {}) => ({
  expense_type: 'fixed',
  description: 'Aluguel',
  original_amount: 1200.1,
  final_amount: 1100.1,
  ...extra,
});

describe('customers, suppliers and expenses writes', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  describe('customers', () => {
    it('creates with 201, every field of the body and is_active true', async () => {
      const { key } = await writer(s);
      const body = {
        full_name: 'Maria Silva',
        email: 'maria@example.com',
        phone: '+55 11 99999-0000',
        document: '123.456.789-09',
        gender: 'female',
        notes: 'VIP',
        birth_date: '1990-02-28',
        accepts_communications: true,
        address_country: 'BR',
        address_state: 'SP',
        address_city: 'São Paulo',
        address_neighborhood: 'Centro',
        address_street: 'Rua A',
        address_number: '10',
        address_complement: 'ap 1',
        address_zip_code: '01000-000',
      };
      const res = await s.request('POST', '/v1/customers', { key, body: { ...body, is_active: false, valid_whatsapp: true } });
      assert.equal(res.status, 201, res.text);
      const d = res.body.data;
      for (const [k, v] of Object.entries(body)) assert.equal(d[k], v, k);
      assert.equal(d.is_active, true);
      assert.equal(d.valid_whatsapp, null);
      assert.match(d.created_at, ISO_MS);
      assert.equal(d.updated_at, null);
      assert.equal(res.body.meta.request_id, res.headers.get('x-request-id'));
      assert.deepEqual((await s.request('GET', `/v1/customers/${d.id}`, { key })).body.data, d);
    });

    it('accepts a customer with a phone and no e-mail, or an e-mail and no phone', async () => {
      const { key } = await writer(s);
      assert.equal((await s.request('POST', '/v1/customers', { key, body: { full_name: 'A', email: null, phone: '1' } })).status, 201);
      assert.equal((await s.request('POST', '/v1/customers', { key, body: { full_name: 'B', email: 'b@example.com' } })).status, 201);
    });

    it('applies the phone-or-email rule on PATCH to the record as it would be stored', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/customers', { key, body: { full_name: 'A', email: 'a@example.com' } })).body.data;
      assertFieldError(
        await s.request('PATCH', `/v1/customers/${id}`, { key, body: { email: null } }),
        'phone',
        'required_when_email_null',
      );
      const ok = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { email: null, phone: '11 5555' } });
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual([ok.body.data.email, ok.body.data.phone], [null, '11 5555']);
      assertFieldError(
        await s.request('PATCH', `/v1/customers/${id}`, { key, body: { phone: null } }),
        'phone',
        'required_when_email_null',
      );
    });

    it('PATCHes only the fields sent, sets updated_at, and may reactivate', async () => {
      const { key } = await writer(s);
      const created = (await s.request('POST', '/v1/customers', { key, body: { full_name: 'A', email: 'a@example.com', notes: 'n' } })).body
        .data;
      const res = await s.request('PATCH', `/v1/customers/${created.id}`, {
        key,
        body: { full_name: 'A B', created_at: '2000-01-01T00:00:00Z' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.full_name, 'A B');
      assert.equal(res.body.data.notes, 'n');
      assert.equal(res.body.data.created_at, created.created_at);
      assert.match(res.body.data.updated_at, ISO_MS);
      assert.equal((await s.request('DELETE', `/v1/customers/${created.id}`, { key })).status, 204);
      assert.equal((await s.request('GET', `/v1/customers/${created.id}`, { key })).body.data.is_active, false);
      const back = await s.request('PATCH', `/v1/customers/${created.id}`, { key, body: { is_active: true } });
      assert.equal(back.body.data.is_active, true);
    });

    it('deactivates on DELETE with 204, no body, the record kept and listed', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/customers', { key, body: { full_name: 'A', phone: '1' } })).body.data;
      const del = await s.request('DELETE', `/v1/customers/${id}`, { key });
      assert.equal(del.status, 204);
      assert.equal(del.text, '');
      const got = await s.request('GET', `/v1/customers/${id}`, { key });
      assert.equal(got.body.data.is_active, false);
      assert.match(got.body.data.updated_at, ISO_MS);
      assert.equal((await s.request('DELETE', `/v1/customers/${id}`, { key })).status, 204);
      const list = await s.request('GET', '/v1/customers', { key });
      assert.deepEqual(
        list.body.data.map((c: { id: string; is_active: boolean }) => [c.id, c.is_active]),
        [[id, false]],
      );
    });
  });

  describe('suppliers', () => {
    it('creates with is_active true whatever the body says, and pix keys as objects', async () => {
      const { key } = await writer(s);
      const res = await s.request('POST', '/v1/suppliers', {
        key,
        body: {
          trade_name: 'Padaria',
          is_active: false,
          pix_keys: [{ type: 'cnpj', key: '12.345.678/0001-90', extra: 1 }],
          birth_date: '1980-01-01',
        },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.data.is_active, true);
      assert.equal(res.body.data.trade_name, 'Padaria');
      assert.equal(res.body.data.name, null);
      assert.deepEqual(res.body.data.pix_keys, [{ type: 'cnpj', key: '12.345.678/0001-90' }]);
      assert.equal(res.body.data.birth_date, '1980-01-01');
      // The answer is made from the values inserted: a read of the record gives it exactly.
      const read = await s.request('GET', `/v1/suppliers/${res.body.data.id}`, { key });
      const dataText = (text: string) => text.slice(0, text.indexOf(',"meta":'));
      assert.ok(dataText(res.text).startsWith('{"data":{"id":'), res.text);
      assert.equal(dataText(read.text), dataText(res.text));
    });

    it('keeps at least one name on PATCH and ignores is_active there', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } })).body.data;
      assertFieldError(await s.request('PATCH', `/v1/suppliers/${id}`, { key, body: { name: null } }), 'name', 'name_required');
      const res = await s.request('PATCH', `/v1/suppliers/${id}`, {
        key,
        body: { name: null, legal_name: 'F LTDA', is_active: false, pix_keys: null },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        [res.body.data.name, res.body.data.legal_name, res.body.data.is_active, res.body.data.pix_keys],
        [null, 'F LTDA', true, null],
      );
    });

    it('deactivates on DELETE and keeps the record', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } })).body.data;
      assert.equal((await s.request('DELETE', `/v1/suppliers/${id}`, { key })).status, 204);
      const got = await s.request('GET', `/v1/suppliers/${id}`, { key });
      assert.deepEqual([got.status, got.body.data.is_active, got.body.data.name], [200, false, 'F']);
    });
  });

  describe('expenses', () => {
    it('generates expense_number when omitted, keeps a given one, and never writes installment fields', async () => {
      const { key } = await writer(s);
      const res = await s.request('POST', '/v1/expenses', {
        key,
        body: expenseBody({
          installment_number: 2,
          total_installments: 5,
          is_recurring: true,
          tags: ['aluguel', 'fixo'],
          installments: 3,
          id: randomUUID(),
        }),
      });
      assert.equal(res.status, 201, res.text);
      const d = res.body.data;
      assert.match(d.expense_number, /^API-\d{13}-[0-9a-z]{6}$/);
      assert.deepEqual([d.installment_number, d.total_installments, d.is_recurring, d.is_active], [null, null, false, true]);
      assert.deepEqual(d.tags, ['aluguel', 'fixo']);
      assert.equal(d.installments, 3);
      assert.deepEqual([d.original_amount, d.final_amount, d.discount_amount], [1200.1, 1100.1, null]);
      const given = await s.request('POST', '/v1/expenses', {
        key,
        body: expenseBody({ expense_number: 'NF-001', discount_amount: 0.1 + 0.2 }),
      });
      assert.equal(given.body.data.expense_number, 'NF-001');
      assert.equal(given.body.data.discount_amount, 0.3);
    });

    it('PATCHes status and payment_date, sets updated_at, and ignores read-only fields', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/expenses', { key, body: expenseBody({ status: 'pending' }) })).body.data;
      const res = await s.request('PATCH', `/v1/expenses/${id}`, {
        key,
        body: { status: 'paid', payment_date: '2026-11-20', installment_number: 9, expense_type: 'variable' },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        [res.body.data.status, res.body.data.payment_date, res.body.data.installment_number, res.body.data.expense_type],
        ['paid', '2026-11-20', null, 'variable'],
      );
      assert.match(res.body.data.updated_at, ISO_MS);
      const tags = await s.request('PATCH', `/v1/expenses/${id}`, { key, body: { tags: [] } });
      assert.deepEqual(tags.body.data.tags, []);
      const noTags = await s.request('PATCH', `/v1/expenses/${id}`, { key, body: { tags: null, final_amount: 4.35 * 100 } });
      assert.deepEqual([noTags.body.data.tags, noTags.body.data.final_amount], [null, 435]);
    });

    it('accepts a supplier and a bank account of the account, and refuses those of another one', async () => {
      const owner = await writer(s);
      const other = await writer(s);
      const supplier = (await s.request('POST', '/v1/suppliers', { key: owner.key, body: { name: 'F' } })).body.data.id;
      const bank = await s.db
        .insertInto('bank_accounts')
        .values({ team_id: owner.accountId, mode: 'live', account_name: 'Caixa' })
        .returning('id')
        .executeTakeFirstOrThrow();
      const ok = await s.request('POST', '/v1/expenses', {
        key: owner.key,
        body: expenseBody({ supplier_id: supplier, bank_account_id: bank.id }),
      });
      assert.equal(ok.status, 201, ok.text);
      assert.deepEqual([ok.body.data.supplier_id, ok.body.data.bank_account_id], [supplier, bank.id]);

      const refused = await s.request('POST', '/v1/expenses', {
        key: other.key,
        body: expenseBody({ supplier_id: supplier, bank_account_id: bank.id }),
      });
      assertFieldError(refused, 'supplier_id', 'not_found');
      assertFieldError(refused, 'bank_account_id', 'not_found');
      assert.equal((await s.request('GET', '/v1/expenses', { key: other.key })).body.data.length, 0);

      // The test mode of the same account is another tenant too.
      const testKey = await s.createKey(owner.accountId, { test: true });
      assertFieldError(
        await s.request('POST', '/v1/expenses', { key: testKey.key, body: expenseBody({ supplier_id: supplier }) }),
        'supplier_id',
        'not_found',
      );
      // And a PATCH pointing at another account's supplier changes nothing.
      const mine = (await s.request('POST', '/v1/expenses', { key: other.key, body: expenseBody() })).body.data.id;
      assertFieldError(
        await s.request('PATCH', `/v1/expenses/${mine}`, { key: other.key, body: { supplier_id: supplier, notes: 'x' } }),
        'supplier_id',
        'not_found',
      );
      const after = (await s.request('GET', `/v1/expenses/${mine}`, { key: other.key })).body.data;
      assert.deepEqual([after.supplier_id, after.notes, after.updated_at], [null, null, null]);
    });

    it('deactivates on DELETE with 204 and keeps the record', async () => {
      const { key } = await writer(s);
      const { id } = (await s.request('POST', '/v1/expenses', { key, body: expenseBody() })).body.data;
      assert.equal((await s.request('DELETE', `/v1/expenses/${id}`, { key })).status, 204);
      const got = await s.request('GET', `/v1/expenses/${id}`, { key });
      assert.deepEqual([got.status, got.body.data.is_active, got.body.data.description], [200, false, 'Aluguel']);
    });
  });

  describe('the tenant wall', () => {
    for (const [resource, body] of [
      ['customers', { full_name: 'A', phone: '1' }],
      ['suppliers', { name: 'F' }],
      ['expenses', expenseBody()],
    ] as const) {
      it(`answers 404 to PATCH/DELETE of ${resource} from another account or mode, changing nothing`, async () => {
        const owner = await writer(s);
        const intruder = await writer(s);
        const ownerTest = await s.createKey(owner.accountId, { test: true });
        const created = (await s.request('POST', `/v1/${resource}`, { key: owner.key, body })).body.data;
        for (const key of [intruder.key, ownerTest.key]) {
          const patch = await s.request('PATCH', `/v1/${resource}/${created.id}`, { key, body: { notes: 'hacked' } });
          assert.equal(patch.status, 404);
          assert.doesNotMatch(patch.text, new RegExp(owner.accountId));
          assert.equal((await s.request('DELETE', `/v1/${resource}/${created.id}`, { key })).status, 404);
        }
        for (const id of [randomUUID(), 'x']) {
          assert.equal((await s.request('PATCH', `/v1/${resource}/${id}`, { key: owner.key, body: { notes: 'n' } })).status, 404);
          assert.equal((await s.request('DELETE', `/v1/${resource}/${id}`, { key: owner.key })).status, 404);
        }
        assert.deepEqual((await s.request('GET', `/v1/${resource}/${created.id}`, { key: owner.key })).body.data, created);
      });
    }

    it('keeps writes away from read-only plans and keys without the write scope', async () => {
      const readOnly = await s.createAccountWithKey({ readOnly: true });
      const res = await s.request('POST', '/v1/customers', { key: readOnly.key, body: { full_name: 'A', phone: '1' } });
      assert.equal(res.status, 403);
      assert.match(res.body.type, /\/insufficient_scope$/);
      const reader = await writer(s, { scopes: ['customers:read'] });
      assert.equal((await s.request('DELETE', `/v1/customers/${randomUUID()}`, { key: reader.key })).status, 403);
    });
  });
});
