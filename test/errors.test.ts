// The error format on every failure path (SPEC part 7, DECISIONS B.13) and X-Request-Id.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { type Config, loadConfig } from '../src/config.ts';
import { generateApiKey } from '../src/domain/api-keys.ts';
import { type Database, openDatabase } from '../src/infra/db/engine/database.ts';
import { toAppError } from '../src/errors/database-errors.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

const LEAKS = [/select/i, /relation/i, /constraint/i, /\bat \S+ \(/, /node_modules/, /pg_/, /postgres/i, /ECONNREFUSED/, /secret_pw/];

/** A request whose key lookup meets the given (broken) database answers 503, leaking nothing. */
async function assertKeyLookupUnavailable(config: Config, database: Database) {
  const app = await buildApp({ config, database, logger: false });
  try {
    const res = await app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { authorization: `Bearer ${generateApiKey('balcao', 'live').key}` },
    });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().type, 'http://balcao.test/errors/service_unavailable');
    assertNoLeak(res.body);
  } finally {
    await app.close();
    await database.close();
  }
}

function assertNoLeak(text: string) {
  for (const pattern of LEAKS) assert.doesNotMatch(text, pattern);
}

describe('errors and request ids', () => {
  let s: TestServer;
  let key: string;
  before(async () => {
    s = await startTestServer({
      extraRoutes: (app) => {
        app.get('/v1/_boom', { config: { operationId: 'test.boom' } }, async () => {
          const err = Object.assign(
            new Error('duplicate key value violates unique constraint "customers_pkey" in SELECT * FROM customers'),
            {
              code: '23505',
              constraint: 'customers_pkey',
            },
          );
          throw err;
        });
        app.get('/v1/_down', { config: { operationId: 'test.down' } }, async () => {
          throw Object.assign(new Error('connect ECONNREFUSED 10.1.1.1:5432 password=secret_pw'), { code: 'ECONNREFUSED' });
        });
      },
    });
    key = (await s.createAccountWithKey()).key;
  });
  after(() => s.close());

  it('echoes a valid client X-Request-Id in the header and the envelope', async () => {
    const res = await s.request('GET', '/v1/me', { key, headers: { 'x-request-id': 'erp-42_abc-DEF' } });
    assert.equal(res.headers.get('x-request-id'), 'erp-42_abc-DEF');
    assert.equal(res.body.meta.request_id, 'erp-42_abc-DEF');
  });

  it('echoes it in problems too', async () => {
    const res = await s.request('GET', '/v1/me', { headers: { 'x-request-id': 'abc' } });
    assert.equal(res.headers.get('x-request-id'), 'abc');
    assert.equal(res.body.request_id, 'abc');
  });

  for (const bad of ['x'.repeat(129), 'has space', 'semi;colon', 'ç']) {
    it(`replaces an invalid client X-Request-Id (${bad.slice(0, 12)}…) with a new one`, async () => {
      const res = await s.request('GET', '/v1/me', {
        key,
        headers: { 'x-request-id': encodeURI(bad) === bad ? bad : encodeURIComponent(bad) },
      });
      const id = res.headers.get('x-request-id');
      assert.ok(id && id !== bad);
      assert.match(id, /^[0-9a-f-]{36}$/);
      assert.equal(res.body.meta.request_id, id);
    });
  }

  it('accepts a 128-character client id', async () => {
    const id = 'a'.repeat(128);
    assert.equal((await s.request('GET', '/v1/me', { key, headers: { 'x-request-id': id } })).headers.get('x-request-id'), id);
  });

  it('gives every request a distinct id', async () => {
    const a = await s.request('GET', '/v1/me', { key });
    const b = await s.request('GET', '/v1/me', { key });
    assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
  });

  it('answers an unknown path with 404 not_found as problem+json', async () => {
    const res = await s.request('GET', '/v1/nothing-here', { key });
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type')!, /^application\/problem\+json/);
    assert.equal(res.body.type, 'http://balcao.test/errors/not_found');
    assert.equal(res.body.instance, '/v1/nothing-here');
    assert.equal(res.body.request_id, res.headers.get('x-request-id'));
  });

  it('answers a known path with another method with 405 and Allow', async () => {
    const res = await s.request('DELETE', '/v1/me', { key });
    assert.equal(res.status, 405);
    assert.equal(res.body.type, 'http://balcao.test/errors/method_not_allowed');
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
    const put = await s.request('PUT', '/v1/customers', { key, body: {} });
    assert.equal(put.status, 405);
    assert.deepEqual(put.headers.get('allow')!.split(', ').sort(), ['GET', 'HEAD', 'POST']);
  });

  it('answers 405 (not 422) for a malformed body sent with the wrong method', async () => {
    const res = await s.request('POST', '/v1/me', { key, body: '{nope' });
    assert.equal(res.status, 405);
  });

  it('answers 415 unsupported_media_type for a write body that is not JSON', async () => {
    const res = await s.request('POST', '/v1/customers', { key, body: 'full_name=Ana', headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 415);
    assert.equal(res.body.type, 'http://balcao.test/errors/unsupported_media_type');
    const form = await s.request('POST', '/v1/customers', {
      key,
      body: 'a=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.status, 415);
  });

  it('answers 413 payload_too_large for a body over 1 MiB', async () => {
    const body = JSON.stringify({ full_name: 'A', notes: 'x'.repeat(1024 * 1024 + 10) });
    const res = await s.request('POST', '/v1/customers', { key, body });
    assert.equal(res.status, 413);
    assert.equal(res.body.type, 'http://balcao.test/errors/payload_too_large');
  });

  it('answers 422 with errors[] field body, code invalid_json for malformed JSON', async () => {
    const res = await s.request('POST', '/v1/customers', { key, body: '{"full_name": ' });
    assert.equal(res.status, 422);
    assert.equal(res.body.type, 'http://balcao.test/errors/validation');
    assert.deepEqual(
      res.body.errors.map((e: any) => [e.field, e.code]),
      [['body', 'invalid_json']],
    );
    assert.equal(typeof res.body.errors[0].message, 'string');
  });

  it('turns an unexpected failure into 500 internal_error without SQL, constraint names or stacks', async () => {
    const res = await s.request('GET', '/v1/_boom', { key });
    assert.equal(res.status, 500);
    assert.equal(res.body.type, 'http://balcao.test/errors/internal_error');
    assert.equal(res.body.request_id, res.headers.get('x-request-id'));
    assertNoLeak(res.text);
    assert.doesNotMatch(res.text, /customers_pkey|23505/);
  });

  it('turns a lost database connection into 503 service_unavailable without driver text', async () => {
    const res = await s.request('GET', '/v1/_down', { key });
    assert.equal(res.status, 503);
    assert.equal(res.body.type, 'http://balcao.test/errors/service_unavailable');
    assertNoLeak(res.text);
  });
});

describe('an unreachable database', () => {
  it('answers 503 service_unavailable (not 500) when the key lookup cannot reach PostgreSQL', async () => {
    const config = loadConfig({ PORT: '0', BALCAO_PUBLIC_URL: 'http://balcao.test' });
    const database = await openDatabase({ databaseUrl: 'postgres://balcao:secret_pw@127.0.0.1:1/balcao', dataDir: '' });
    await assertKeyLookupUnavailable(config, database);
  });
});

describe('error type URLs', () => {
  it('use BALCAO_PUBLIC_URL, or BALCAO_ERRORS_URL when set', async () => {
    const a = await startTestServer({ env: { BALCAO_PUBLIC_URL: 'https://api.example.com/' } });
    const b = await startTestServer({ env: { BALCAO_ERRORS_URL: 'https://docs.example.com/problems' } });
    try {
      assert.equal((await a.request('GET', '/v1/me')).body.type, 'https://api.example.com/errors/invalid_token');
      assert.equal((await b.request('GET', '/v1/me')).body.type, 'https://docs.example.com/problems/invalid_token');
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('unknown /v1 paths', () => {
  it('are authenticated first: 401 without a key, 404 with one (counted, with rate-limit headers)', async () => {
    const s = await startTestServer();
    try {
      const { key } = await s.createAccountWithKey();
      const anonymous = await s.request('GET', '/v1/nothing');
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.type, 'http://balcao.test/errors/invalid_token');
      const known = await s.request('GET', '/v1/nothing', { key });
      assert.equal(known.status, 404);
      assert.ok(known.headers.get('x-ratelimit-limit'));
      const elsewhere = await s.request('GET', '/nothing');
      assert.equal(elsewhere.status, 404);
    } finally {
      await s.close();
    }
  });
});

describe('a database that is gone', () => {
  it('answers 503 when the PostgreSQL database no longer exists (or the login is refused)', async () => {
    const adminUrl = process.env.TEST_DATABASE_URL;
    // Without a PostgreSQL server the same mapping is checked on the errors the driver raises.
    const config = loadConfig({ PORT: '0', BALCAO_PUBLIC_URL: 'http://balcao.test' });
    if (!adminUrl) {
      for (const code of ['3D000', '28P01', '57P01', '08006'])
        assert.equal(toAppError(Object.assign(new Error('x'), { code })).code, 'service_unavailable', code);
      assert.equal(toAppError(Object.assign(new Error('x'), { code: '42P01' })).code, 'internal_error');
      return;
    }
    const url = new URL(adminUrl);
    url.pathname = '/balcao_no_such_database';
    const database = await openDatabase({ databaseUrl: url.toString(), dataDir: '' });
    await assertKeyLookupUnavailable(config, database);
  });
});

describe('configuration', () => {
  it('refuses a BALCAO_TRUST_PROXY that is neither true nor IPs/CIDRs, naming the variable', () => {
    assert.throws(() => loadConfig({ BALCAO_TRUST_PROXY: 'garbage' }), /BALCAO_TRUST_PROXY.*garbage/);
    assert.deepEqual(loadConfig({ BALCAO_TRUST_PROXY: '10.0.0.0/8, ::1' }).trustProxy, ['10.0.0.0/8', '::1']);
    assert.equal(loadConfig({ BALCAO_TRUST_PROXY: 'true' }).trustProxy, true);
  });
});
