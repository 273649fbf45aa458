// Tenancy of every read route: another account's rows and the other mode's rows are invisible
// (lists empty, GET by id 404); deleted products and quotes never appear; each route is guarded
// by its resource's scope and module.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RESOURCES } from '../src/resources/registry.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { UNLIMITED, insertRow, TABLES } from './helpers/read-data.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => s?.close());

describe('isolation', () => {
  test('every resource: a live key sees its live rows only, a test key its test rows only, never another account’s', async () => {
    const mine = await s.createAccountWithKey(UNLIMITED);
    const testKey = (await s.createKey(mine.account.id, { test: true })).key;
    const theirs = await s.createAccountWithKey(UNLIMITED);
    for (const d of RESOURCES) {
      const table = TABLES[d.name]!;
      const live = await insertRow(s.db, table, { accountId: mine.account.id, mode: 'live' });
      const sandbox = await insertRow(s.db, table, { accountId: mine.account.id, mode: 'test' });
      const foreign = await insertRow(s.db, table, { accountId: theirs.account.id, mode: 'live' });
      const seen = async (key: string) =>
        ((await s.request('GET', `/v1/${d.name}?limit=100`, { key })).body.data as { id: string }[]).map((r) => r.id);
      assert.deepEqual(await seen(mine.key), [live.id], `${d.name} live list`);
      assert.deepEqual(await seen(testKey), [sandbox.id], `${d.name} test list`);
      assert.deepEqual(await seen(theirs.key), [foreign.id], `${d.name} other account`);
      const status = async (key: string, id: unknown) => (await s.request('GET', `/v1/${d.name}/${id}`, { key })).status;
      assert.equal(await status(mine.key, live.id), 200);
      assert.equal(await status(mine.key, sandbox.id), 404, `${d.name}: a test row through a live key`);
      assert.equal(await status(testKey, live.id), 404, `${d.name}: a live row through a test key`);
      assert.equal(await status(testKey, sandbox.id), 200);
      assert.equal(await status(mine.key, foreign.id), 404, `${d.name}: another account's row`);
    }
  });

  test('deal stages follow the same tenant', async () => {
    const mine = await s.createAccountWithKey(UNLIMITED);
    const testKey = (await s.createKey(mine.account.id, { test: true })).key;
    const live = await insertRow(s.db, 'deal_stages', { accountId: mine.account.id, mode: 'live' }, { name: 'live' });
    const sandbox = await insertRow(s.db, 'deal_stages', { accountId: mine.account.id, mode: 'test' }, { name: 'sandbox' });
    assert.deepEqual(
      (await s.request('GET', '/v1/deals/stages', { key: mine.key })).body.data.map((x: { id: string }) => x.id),
      [live.id],
    );
    assert.deepEqual(
      (await s.request('GET', '/v1/deals/stages', { key: testKey })).body.data.map((x: { id: string }) => x.id),
      [sandbox.id],
    );
  });

  test('deleted products never appear, in lists, by id or through filters', async () => {
    const { account, key } = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: account.id, mode: 'live' as const };
    const kept = await insertRow(s.db, 'catalog_items', tenant, { name: 'ativo' });
    const gone = await insertRow(s.db, 'catalog_items', tenant, { name: 'apagado', deleted_at: new Date() });
    const list = await s.request('GET', '/v1/products', { key });
    assert.deepEqual(
      list.body.data.map((p: { id: string }) => p.id),
      [kept.id],
    );
    assert.equal((await s.request('GET', `/v1/products/${gone.id}`, { key })).status, 404);
    assert.deepEqual((await s.request('GET', '/v1/products?filter[name][eq]=apagado', { key })).body.data, []);
  });

  test('quotes and other transaction types never appear as sales', async () => {
    const { account, key } = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: account.id, mode: 'live' as const };
    const sale = await insertRow(s.db, 'transactions', tenant, { transaction_type: 'sale' });
    const order = await insertRow(s.db, 'transactions', tenant, { transaction_type: 'order' });
    const quote = await insertRow(s.db, 'transactions', tenant, { transaction_type: 'quote' });
    const list = await s.request('GET', '/v1/sales?sort=created_at', { key });
    assert.deepEqual(list.body.data.map((x: { id: string }) => x.id).sort(), [sale.id, order.id].sort());
    assert.equal((await s.request('GET', `/v1/sales/${quote.id}`, { key })).status, 404);
    assert.deepEqual(
      (await s.request('GET', '/v1/sales?filter[transaction_type][in]=quote,sale', { key })).body.data.map((x: { id: string }) => x.id),
      [sale.id],
    );
  });
});

describe('guards declared by every read route', () => {
  test('each list and item route needs <resource>:read and the resource’s module', async () => {
    const { account } = await s.createAccountWithKey(UNLIMITED);
    for (const d of RESOURCES) {
      const other = RESOURCES.find((r) => r.module !== d.module)!;
      const wrongScope = (await s.createKey(account.id, { scopes: [`${other.name}:read`] })).key;
      for (const path of [`/v1/${d.name}`, `/v1/${d.name}/00000000-0000-4000-8000-000000000000`]) {
        const res = await s.request('GET', path, { key: wrongScope });
        assert.equal(res.status, 403, path);
        assert.ok(res.body.type.endsWith('/insufficient_scope'), path);
      }
      const noModule = await s.createAccountWithKey({ ...UNLIMITED, modules: [other.module], scopes: [`${d.name}:read`] });
      const res = await s.request('GET', `/v1/${d.name}`, { key: noModule.key });
      assert.equal(res.status, 403);
      assert.ok(res.body.type.endsWith('/module_not_enabled'), d.name);
      const allowed = await s.createAccountWithKey({ ...UNLIMITED, modules: [d.module], scopes: [`${d.name}:read`] });
      assert.equal((await s.request('GET', `/v1/${d.name}`, { key: allowed.key })).status, 200, d.name);
    }
  });
});
