// Authentication and the guard over HTTP: every failure of SPEC 5.7 in its order, IP rules,
// scope implications, modules, the read-only plan, test mode in /v1/me, and the cache's
// promise that a revoked key or a changed account is seen within 5 seconds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { updateAccount } from '../src/accounts/account-repository.ts';
import { revokeKey } from '../src/accounts/key-repository.ts';
import { generateApiKey } from '../src/domain/api-keys.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

const problemType = (code: string) => `http://balcao.test/errors/${code}`;

function assertProblem(res: { status: number; headers: Headers; body: any }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.type, problemType(code));
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
  assert.equal(res.body.code, undefined, 'no top-level code field');
}

describe('authentication', () => {
  let s: TestServer;
  let offset = 0;
  before(async () => {
    s = await startTestServer({ now: () => Date.now() + offset });
  });
  after(() => s.close());

  it('accepts a valid key and describes it in /v1/me', async () => {
    const { account, key, keyId } = await s.createAccountWithKey({
      name: 'Salão Bela Vista',
      plan: 'starter',
      modules: ['clientes', 'vendas'],
      scopes: ['customers:write', 'sales:read'],
    });
    const res = await s.request('GET', '/v1/me', { key });
    assert.equal(res.status, 200);
    // The live counters (test/live-limits.test.ts) depend on the clock; their shape is checked here.
    const { rate_limit_status: live, ...described } = res.body.data;
    assert.deepEqual(Object.keys(live), ['burst', 'read', 'write', 'day']);
    assert.deepEqual(live.read.limit, 60);
    assert.deepEqual(described, {
      team_id: account.id,
      team_name: 'Salão Bela Vista',
      key_id: keyId,
      key_name: 'test key',
      key_last4: key.slice(-4),
      key_prefix: 'live',
      scopes: ['customers:write', 'sales:read'],
      plan_code: 'starter',
      modules: ['clientes', 'vendas'],
      rate_limits: { burst_per_second: 10, requests_per_minute_read: 60, requests_per_minute_write: 30, requests_per_day_total: 10000 },
    });
    assert.deepEqual(res.body.meta, { request_id: res.headers.get('x-request-id') });
  });

  it('shows the effective rate limits: plan values with the contract overrides', async () => {
    const { key } = await s.createAccountWithKey({ plan: 'pro', rateLimits: { burst_per_second: 3, requests_per_day_total: 500 } });
    const res = await s.request('GET', '/v1/me', { key });
    assert.deepEqual(res.body.data.rate_limits, {
      burst_per_second: 3,
      requests_per_minute_read: 300,
      requests_per_minute_write: 120,
      requests_per_day_total: 500,
    });
  });

  it('reports key_prefix test for a test-mode key, and needs no scope or module for /v1/me', async () => {
    const { key } = await s.createAccountWithKey({ test: true, scopes: [], modules: [] });
    assert.match(key, /^balcao_test_/);
    const res = await s.request('GET', '/v1/me', { key });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.key_prefix, 'test');
    assert.deepEqual(res.body.data.scopes, []);
    assert.deepEqual(res.body.data.modules, []);
  });

  for (const [name, header] of [
    ['missing', undefined],
    ['empty', ''],
    ['not Bearer', 'Basic dXNlcjpwYXNz'],
    ['Bearer without key', 'Bearer '],
    ['garbage', 'Bearer nope'],
    ['bad checksum', 'Bearer balcao_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
  ] as const) {
    it(`answers 401 invalid_token for a ${name} Authorization header`, async () => {
      const res = await s.request('GET', '/v1/me', { headers: header === undefined ? {} : { authorization: header } });
      assertProblem(res, 401, 'invalid_token');
      assert.equal(res.headers.get('x-ratelimit-limit'), null, 'anonymous responses carry no key rate-limit headers');
    });
  }

  it('answers 401 invalid_token for a well-formed key that does not exist', async () => {
    const res = await s.request('GET', '/v1/me', { key: generateApiKey('balcao', 'live').key });
    assertProblem(res, 401, 'invalid_token');
  });

  it('answers 401 invalid_token for a key of another brand', async () => {
    const res = await s.request('GET', '/v1/me', { key: generateApiKey('other', 'live').key });
    assertProblem(res, 401, 'invalid_token');
  });

  it('accepts the Bearer scheme case-insensitively', async () => {
    const { key } = await s.createAccountWithKey();
    const res = await s.request('GET', '/v1/me', { headers: { authorization: `bearer ${key}` } });
    assert.equal(res.status, 200);
  });

  it('answers 401 token_revoked for a revoked key, before checking expiry', async () => {
    const account = await s.createAccount();
    const { id, key } = await s.createKey(account.id, { expiresAt: new Date(Date.now() - 60_000) });
    await revokeKey(s.db, id);
    assertProblem(await s.request('GET', '/v1/me', { key }), 401, 'token_revoked');
  });

  it('answers 401 token_expired for a key past its expiration, and accepts one not yet expired', async () => {
    const account = await s.createAccount();
    const expired = await s.createKey(account.id, { expiresAt: new Date(Date.now() - 1000) });
    assertProblem(await s.request('GET', '/v1/me', { key: expired.key }), 401, 'token_expired');
    const account2 = await s.createAccount();
    const later = await s.createKey(account2.id, { expiresAt: new Date(Date.now() + 3_600_000) });
    assert.equal((await s.request('GET', '/v1/me', { key: later.key })).status, 200);
  });

  it('answers 403 api_disabled when the account has the API disabled, even on /v1/me', async () => {
    const { key } = await s.createAccountWithKey({ apiEnabled: false });
    assertProblem(await s.request('GET', '/v1/me', { key }), 403, 'api_disabled');
  });

  it('sees a revoked key and a disabled account within 5 seconds although the key was cached', async () => {
    const { account, key, keyId } = await s.createAccountWithKey();
    assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
    await revokeKey(s.db, keyId);
    offset += 5_000;
    assertProblem(await s.request('GET', '/v1/me', { key }), 401, 'token_revoked');

    const other = await s.createAccountWithKey();
    assert.equal((await s.request('GET', '/v1/me', { key: other.key })).status, 200);
    await updateAccount(s.db, other.account.id, { api_enabled: false });
    offset += 5_000;
    assertProblem(await s.request('GET', '/v1/me', { key: other.key }), 403, 'api_disabled');
    assert.ok(account.id);
  });
});

describe('IP allow-lists over HTTP', () => {
  let s: TestServer;
  let proxied: TestServer;
  before(async () => {
    s = await startTestServer();
    proxied = await startTestServer({ env: { BALCAO_TRUST_PROXY: '127.0.0.1' } });
  });
  after(async () => {
    await s.close();
    await proxied.close();
  });

  it('accepts a caller inside the list (address or CIDR) and refuses one outside with 403 ip_not_allowed', async () => {
    const inside = await s.createAccountWithKey({ allowedIps: ['127.0.0.1'] });
    assert.equal((await s.request('GET', '/v1/me', { key: inside.key })).status, 200);
    const range = await s.createAccountWithKey({ allowedIps: ['10.0.0.0/8', '127.0.0.0/24'] });
    assert.equal((await s.request('GET', '/v1/me', { key: range.key })).status, 200);
    const outside = await s.createAccountWithKey({ allowedIps: ['10.0.0.0/8', '2001:db8::/32'] });
    assertProblem(await s.request('GET', '/v1/me', { key: outside.key }), 403, 'ip_not_allowed');
  });

  it('ignores X-Forwarded-For unless the proxy is trusted (BALCAO_TRUST_PROXY)', async () => {
    const a = await s.createAccountWithKey({ allowedIps: ['203.0.113.0/24'] });
    const spoofed = await s.request('GET', '/v1/me', { key: a.key, headers: { 'x-forwarded-for': '203.0.113.9' } });
    assertProblem(spoofed, 403, 'ip_not_allowed');

    const b = await proxied.createAccountWithKey({ allowedIps: ['203.0.113.0/24'] });
    const forwarded = await proxied.request('GET', '/v1/me', { key: b.key, headers: { 'x-forwarded-for': '203.0.113.9' } });
    assert.equal(forwarded.status, 200);
    const elsewhere = await proxied.request('GET', '/v1/me', { key: b.key, headers: { 'x-forwarded-for': '198.51.100.1' } });
    assertProblem(elsewhere, 403, 'ip_not_allowed');
  });
});

describe('the guard: scopes, modules and read-only plans', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('refuses a read without the resource scope (403 insufficient_scope) and accepts it with it', async () => {
    const none = await s.createAccountWithKey({ scopes: ['sales:read'] });
    assertProblem(await s.request('GET', '/v1/customers', { key: none.key }), 403, 'insufficient_scope');
    const ok = await s.createAccountWithKey({ scopes: ['customers:read'] });
    assert.equal((await s.request('GET', '/v1/customers', { key: ok.key })).status, 200);
  });

  it('grants the read with <resource>:write, every read with *:read, and everything with *:write', async () => {
    const write = await s.createAccountWithKey({ scopes: ['customers:write'] });
    assert.equal((await s.request('GET', '/v1/customers', { key: write.key })).status, 200);
    assertProblem(await s.request('GET', '/v1/sales', { key: write.key }), 403, 'insufficient_scope');

    const readAll = await s.createAccountWithKey({ scopes: ['*:read'] });
    for (const path of ['/v1/customers', '/v1/sales', '/v1/bank-accounts', '/v1/deals/stages']) {
      assert.equal((await s.request('GET', path, { key: readAll.key })).status, 200, path);
    }
    assertProblem(
      await s.request('POST', '/v1/customers', { key: readAll.key, body: { full_name: 'Ana', email: 'ana@example.com' } }),
      403,
      'insufficient_scope',
    );

    const writeAll = await s.createAccountWithKey({ scopes: ['*:write'] });
    assert.equal((await s.request('GET', '/v1/expenses', { key: writeAll.key })).status, 200);
    assert.equal(
      (await s.request('POST', '/v1/customers', { key: writeAll.key, body: { full_name: 'Ana', email: 'ana@example.com' } })).status,
      201,
    );
  });

  it('refuses a resource whose module is not on the contract (403 module_not_enabled)', async () => {
    const { key } = await s.createAccountWithKey({ modules: ['vendas'], scopes: ['*:read'] });
    const res = await s.request('GET', '/v1/customers', { key });
    assertProblem(res, 403, 'module_not_enabled');
    assert.match(res.body.detail, /clientes/);
    assert.equal((await s.request('GET', '/v1/sales', { key })).status, 200);
  });

  it('checks the scope before the module', async () => {
    const { key } = await s.createAccountWithKey({ modules: [], scopes: ['sales:read'] });
    assertProblem(await s.request('GET', '/v1/customers', { key }), 403, 'insufficient_scope');
  });

  it('checks the API switch before the scope', async () => {
    const { key } = await s.createAccountWithKey({ apiEnabled: false, scopes: [] });
    assertProblem(await s.request('GET', '/v1/customers', { key }), 403, 'api_disabled');
  });

  it('refuses writes on a read-only plan with insufficient_scope, and allows its reads', async () => {
    const { key } = await s.createAccountWithKey({ readOnly: true, scopes: ['*:write'] });
    assert.equal((await s.request('GET', '/v1/customers', { key })).status, 200);
    assertProblem(
      await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', email: 'ana@example.com' } }),
      403,
      'insufficient_scope',
    );
  });
});
