// Deprecation (docs/api-guide.md, "Versions and deprecation"): a route marked in the route table or
// on its descriptor, and a body field marked with deprecatedField, are `deprecated: true` in the
// description, and their answers carry Deprecation (RFC 9745), Sunset (RFC 8594) and a Link to the
// changelog, which GET /changelog serves. Other routes carry none of them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { deprecatedField, deprecationHeaders } from '../src/http/deprecation.ts';
import { customers } from '../src/resources/descriptors/customers.ts';
import type { ResourceDescriptor } from '../src/resources/descriptor.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { suppliers } from '../src/resources/descriptors/suppliers.ts';
import { CreateSupplierInput } from '../src/resources/writes/suppliers.ts';
import { W } from '../src/resources/writes/fields.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { writer } from './helpers/write-fixtures.ts';

const NOTICE = { since: '2026-01-01', sunset: '2026-07-01', instead: '`/v1/clients`' };
const FIELD_NOTICE = { since: '2026-02-01', sunset: '2026-08-01' };
const EXPECTED = {
  deprecation: `@${Date.UTC(2026, 0, 1) / 1000}`,
  sunset: 'Wed, 01 Jul 2026 00:00:00 GMT',
  link: '<http://balcao.test/changelog>; rel="deprecation"; type="text/markdown"',
};

// Fixtures: every customers route deprecated through its descriptor; a suppliers body field deprecated.
const deprecatedCustomers: ResourceDescriptor = { ...customers, deprecated: NOTICE };
const supplierWrite = suppliers.write as NonNullable<ResourceDescriptor['write']>;
const withOldCode: ResourceDescriptor = {
  ...suppliers,
  write: {
    ...supplierWrite,
    create: Type.Object(
      { ...CreateSupplierInput.properties, code: Type.Optional(deprecatedField(W.textOrNull({ maxLength: 50 }), FIELD_NOTICE)) },
      { title: 'CreateSupplierInput' },
    ),
  },
};
const resources = RESOURCES.map((d) => (d === customers ? deprecatedCustomers : d === suppliers ? withOldCode : d));

describe('deprecation', () => {
  let s: TestServer;
  let key: string;
  before(async () => {
    s = await startTestServer({
      resources,
      extraRoutes: (app) =>
        app.get('/v1/test-old', { config: { operationId: 'test.old', public: true, deprecated: NOTICE } }, async () => ({ ok: true })),
    });
    ({ key } = await writer(s));
  });
  after(async () => s?.close());

  const deprecationOf = (headers: Headers) => ({
    deprecation: headers.get('deprecation'),
    sunset: headers.get('sunset'),
    link: headers.get('link'),
  });

  test('a deprecated route answers with Deprecation, Sunset and Link, on success and on a refused body', async () => {
    const alias = await fetch(`${s.url}/v1/test-old`);
    assert.equal(alias.status, 200);
    assert.deepEqual(deprecationOf(alias.headers), EXPECTED);
    const list = await s.request('GET', '/v1/customers', { key });
    assert.equal(list.status, 200);
    assert.deepEqual(deprecationOf(list.headers), EXPECTED);
    const refused = await s.request('POST', '/v1/customers', { key, body: { full_name: '' } });
    assert.equal(refused.status, 422);
    assert.deepEqual(deprecationOf(refused.headers), EXPECTED);
    const other = await s.request('GET', '/v1/sales', { key });
    assert.equal(other.status, 200);
    assert.deepEqual(deprecationOf(other.headers), { deprecation: null, sunset: null, link: null });
  });

  test('a body sending a deprecated field is answered with the headers; one without it is not', async () => {
    const old = await s.request('POST', '/v1/suppliers', { key, body: { name: 'Fornecedor', code: 'F-1' } });
    assert.equal(old.status, 201, old.text);
    assert.deepEqual(deprecationOf(old.headers), {
      deprecation: `@${Date.UTC(2026, 1, 1) / 1000}`,
      sunset: 'Sat, 01 Aug 2026 00:00:00 GMT',
      link: EXPECTED.link,
    });
    const current = await s.request('POST', '/v1/suppliers', { key, body: { name: 'Fornecedor' } });
    assert.equal(current.status, 201);
    assert.equal(current.headers.get('deprecation'), null);
  });

  test('the description says deprecated: true, with the dates and the headers', async () => {
    const doc = (await s.request('GET', '/v1/openapi.json')).body;
    const list = doc.paths['/v1/customers'].get;
    assert.equal(list.deprecated, true);
    assert.match(list.description, /Deprecated since 2026-01-01; may be removed from 2026-07-01/);
    assert.deepEqual(
      Object.keys(list.responses['200'].headers).filter((h) => ['Deprecation', 'Sunset', 'Link'].includes(h)),
      ['Deprecation', 'Sunset', 'Link'],
    );
    assert.equal(doc.paths['/v1/sales'].get.deprecated, undefined);
    const body = doc.components.requestBodies.CreateSupplierInput.content['application/json'].schema;
    assert.equal(body.properties.code.deprecated, true);
    assert.match(body.properties.code.description, /Deprecated since 2026-02-01/);
  });

  test('GET /changelog serves CHANGELOG.md, where the Link points', async () => {
    const res = await fetch(`${s.url}/changelog`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/markdown/);
    assert.equal(await res.text(), readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8'));
  });

  test('a malformed notice is refused when the route registers', () => {
    assert.throws(() => deprecationHeaders({ since: '2026-07-01', sunset: '2026-01-01' }, 'x'), /since < sunset/);
    assert.throws(() => deprecationHeaders({ since: 'soon', sunset: '2026-01-01' }, 'x'), /YYYY-MM-DD/);
  });
});
