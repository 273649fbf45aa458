// The contract check the harness runs on every response: it accepts what the document
// describes and refuses drift (status, headers, media type, body), so it cannot pass vacuously.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Contract, type ContractResponse } from './helpers/contract.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

describe('the contract check of responses', () => {
  let s: TestServer;
  let key: string;
  let contract: Contract;

  /** A real response, fetched without the harness (which would check it already). */
  async function raw(method: string, path: string, withKey = true): Promise<ContractResponse & { body: any }> {
    const res = await fetch(s.url + path, { method, headers: withKey ? { authorization: `Bearer ${key}` } : {} });
    const text = await res.text();
    const isJson = /json/.test(res.headers.get('content-type') ?? '');
    return { status: res.status, headers: res.headers, text, body: isJson && text ? JSON.parse(text) : undefined };
  }
  const altered = (res: ContractResponse, change: Partial<ContractResponse>, dropHeader?: string): ContractResponse => {
    const headers = new Headers(res.headers);
    if (dropHeader) headers.delete(dropHeader);
    return { ...res, headers, ...change };
  };

  before(async () => {
    s = await startTestServer();
    key = (await s.createAccountWithKey()).key;
    contract = Contract.for(s.app.openapiJson());
  });
  after(() => s.close());

  test('accepts real responses: a success, a problem, a 204, a HEAD and an HTML page', async () => {
    contract.check('GET', '/v1/me', await raw('GET', '/v1/me'));
    contract.check('GET', '/v1/me', await raw('GET', '/v1/me', false));
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', email: 'ana@example.com' } });
    assert.equal(created.status, 201);
    const deleted = await raw('DELETE', `/v1/customers/${created.body.data.id}`);
    assert.equal(deleted.status, 204);
    contract.check('DELETE', `/v1/customers/${created.body.data.id}`, deleted);
    contract.check('HEAD', '/v1/customers?limit=2', await raw('HEAD', '/v1/customers?limit=2'));
    contract.check('GET', '/errors/not_found', await raw('GET', '/errors/not_found', false));
  });

  test('refuses a status the document does not list for that operation', async () => {
    const me = await raw('GET', '/v1/me');
    assert.throws(() => contract.check('GET', '/v1/me', altered(me, { status: 418 })), /status 418 is not documented for GET \/v1\/me/);
  });

  test('refuses a missing X-Request-Id, and missing rate-limit headers on an authenticated success', async () => {
    const me = await raw('GET', '/v1/me');
    assert.throws(() => contract.check('GET', '/v1/me', altered(me, {}, 'x-request-id')), /required header X-Request-Id is missing/);
    assert.throws(
      () => contract.check('GET', '/v1/me', altered(me, {}, 'x-ratelimit-limit')),
      /required header X-RateLimit-Limit is missing/,
    );
    const bad = altered(me, {});
    bad.headers.set('x-ratelimit-reset', 'soon');
    assert.throws(() => contract.check('GET', '/v1/me', bad), /header X-RateLimit-Reset/);
  });

  test('refuses a body that does not match the schema', async () => {
    const me = await raw('GET', '/v1/me');
    const { key_id: _dropped, ...data } = me.body.data;
    assert.throws(
      () => contract.check('GET', '/v1/me', altered(me, { text: JSON.stringify({ ...me.body, data }) })),
      /body\/data must have required property 'key_id'/,
    );
    const problem = await raw('GET', '/v1/me', false);
    const wrongType = JSON.stringify({ ...problem.body, type: 'http://balcao.test/errors/not_found' });
    assert.throws(() => contract.check('GET', '/v1/me', altered(problem, { text: wrongType })), /body\/type must match pattern/);
  });

  test('refuses a problem sent with another media type', async () => {
    const problem = await raw('GET', '/v1/me', false);
    const json = altered(problem, {});
    json.headers.set('content-type', 'application/json; charset=utf-8');
    assert.throws(() => contract.check('GET', '/v1/me', json), /content type "application\/json" is not documented/);
  });

  test('holds another method on a documented path to the 405 with Allow', async () => {
    const put = await raw('PUT', '/v1/me');
    assert.equal(put.status, 405);
    contract.check('PUT', '/v1/me', put);
    assert.throws(() => contract.check('PUT', '/v1/me', altered(put, {}, 'allow')), /required header Allow is missing/);
    assert.throws(() => contract.check('PUT', '/v1/me', altered(put, { status: 404 })), /must answer 405/);
  });

  test('matches concrete paths to templates, static segments first, and skips undocumented paths', async () => {
    assert.equal(contract.templateOf('/v1/deals/stages'), '/v1/deals/stages');
    assert.equal(contract.templateOf('/v1/deals/0b7c1d8e-58a4-4d43-9a3c-6a9f0f4b2a11'), '/v1/deals/{id}');
    assert.equal(contract.templateOf('/v1/customers/a/b'), undefined);
    const nowhere = await raw('GET', '/v1/nowhere');
    assert.equal(nowhere.status, 404);
    contract.check('GET', '/v1/nowhere', altered(nowhere, { status: 418 }));
  });
});
