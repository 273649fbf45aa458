// GET /v1/openapi.json: an OpenAPI 3.1 document, derived from the routes, that lists every API
// route with its parameters, bodies, problem responses, headers and security.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ERROR_CATALOGUE, ERROR_CODES } from '../src/errors/catalogue.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { WRITABLE } from '../src/resources/engines/write-routes.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

/** Path and methods of every route in Fastify's router (its own printout; HEAD is implied by GET). */
function routerTable(printout: string): { path: string; method: string }[] {
  const out: { path: string; method: string }[] = [];
  const stack: string[] = [];
  for (const line of printout.split('\n')) {
    const m = /^([│├└─\s]*)(\S.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m?.[2]) continue;
    const depth = Math.max(0, (m[1] as string).length / 4 - 1);
    stack.length = depth;
    stack.push(m[2]);
    const path = stack.join('');
    for (const method of (m[3] ?? '').split(', ').filter((x) => x && x !== 'HEAD')) out.push({ path, method });
  }
  return out;
}

const toTemplate = (path: string) => path.replace(/:(\w+)/g, '{$1}');

describe('the OpenAPI document', () => {
  let s: TestServer;
  let doc: Json;
  let text: string;

  const operations = () =>
    Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Json })),
    );
  const deref = (node: Json): Json => {
    let value = node;
    while (value?.$ref)
      value = (value.$ref as string)
        .split('/')
        .slice(1)
        .reduce<any>((n, p) => n?.[p.replace(/~1/g, '/')], doc);
    return value;
  };

  before(async () => {
    s = await startTestServer({
      extraRoutes: (app) => {
        app.get('/v1/_probe', { config: { operationId: 'test.probe', public: true } }, async () => ({ ok: true }));
      },
    });
    const res = await s.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
    text = res.text;
  });
  after(() => s.close());

  test('is OpenAPI 3.1.0, version 1.0.0, titled Balcão API, with the public URL as server, without a key', async () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.0');
    assert.equal(doc.info.title, 'Balcão API');
    assert.deepEqual(
      doc.servers.map((x: Json) => x.url),
      ['http://balcao.test'],
    );
    const res = await s.request('GET', '/v1/openapi.json', { headers: { authorization: 'Bearer nonsense' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(res.headers.get('x-request-id'));
    assert.equal(res.headers.get('x-ratelimit-limit'), null);
  });

  test('is built once: every response is the cached document, byte for byte', async () => {
    const again = await s.request('GET', '/v1/openapi.json');
    assert.equal(again.text, text);
    assert.equal(s.app.openapiJson(), text);
  });

  test('lists every API route of the router, with its method and operationId, and no other', () => {
    const table = routerTable(s.app.printRoutes({ commonPrefix: false }));
    assert.ok(table.length > 30);
    const documented = new Set(operations().map((o) => `${o.method.toUpperCase()} ${o.path}`));
    const api = table.filter((r) => r.path.startsWith('/v1/') && !r.path.startsWith('/v1/_'));
    for (const r of api) assert.ok(documented.has(`${r.method} ${toTemplate(r.path)}`), `${r.method} ${r.path} is not documented`);
    for (const r of table.filter((x) => x.path.startsWith('/errors'))) assert.ok(documented.has(`${r.method} ${toTemplate(r.path)}`));
    const registered = new Set(table.map((r) => `${r.method} ${toTemplate(r.path)}`));
    for (const d of documented) assert.ok(registered.has(d), `${d} is documented but not served`);
    const ids = operations().map((o) => o.op.operationId);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of [
      'me.get',
      'customers.list',
      'customers.get',
      'customers.create',
      'sales.update',
      'expenses.delete',
      'deals.stages',
      'openapi.get',
    ])
      assert.ok(ids.includes(id), id);
  });

  test('leaves out test-only, health and asset routes', () => {
    assert.equal(doc.paths['/v1/_probe'], undefined);
    for (const path of Object.keys(doc.paths)) assert.doesNotMatch(path, /^\/(health|docs)/);
  });

  test('a test-only route still answers through the contract-checked harness (it is not documented, so not checked)', async () => {
    const res = await s.request('GET', '/v1/_probe');
    assert.equal(res.status, 200);
  });

  test('lists limit, cursor, sort with its enum, fields and every filter of every resource', () => {
    for (const d of RESOURCES) {
      const op = doc.paths[`/v1/${d.name}`].get;
      const params = new Map<string, Json>(op.parameters.filter((p: Json) => !p.$ref).map((p: Json) => [p.name, p]));
      for (const name of ['limit', 'cursor', 'sort', 'fields']) {
        assert.ok(params.has(name), `${d.name} ${name}`);
        assert.equal(params.get(name)?.in, 'query');
        assert.equal(params.get(name)?.required, false);
      }
      assert.deepEqual([...(params.get('sort')?.schema.enum ?? [])].sort(), d.sorts.flatMap((f) => [f, `-${f}`]).sort());
      assert.equal(params.get('limit')?.schema.maximum, 100);
      const expected = Object.entries(d.filters).flatMap(([field, ops]) => ops.map((o) => `filter[${field}][${o}]`));
      const listed = [...params.keys()].filter((n) => n.startsWith('filter['));
      assert.deepEqual(listed.sort(), expected.sort(), d.name);
      const item = doc.paths[`/v1/${d.name}/{id}`].get;
      const itemParams = item.parameters.map((p: Json) => p.name ?? p.$ref);
      assert.ok(itemParams.includes('fields'));
      assert.ok(itemParams.includes('id'));
      assert.equal(itemParams.includes('include'), Object.keys(d.includes ?? {}).length > 0, `${d.name} include`);
    }
    const deals = doc.paths['/v1/deals'].get.parameters.map((p: Json) => p.name).filter((n: string) => n?.startsWith('filter['));
    assert.deepEqual(deals.sort(), [
      'filter[customer_id][eq]',
      'filter[id][gt]',
      'filter[id][gte]',
      'filter[id][lt]',
      'filter[id][lte]',
      'filter[stage_id][eq]',
      'filter[status][eq]',
      'filter[status][in]',
      'filter[updated_at][gt]',
      'filter[updated_at][gte]',
      'filter[updated_at][lt]',
      'filter[updated_at][lte]',
    ]);
    assert.equal(doc.paths['/v1/deals/stages'].get.parameters.filter((p: Json) => !p.$ref).length, 0);
  });

  test('documents write bodies with named input schemas, Idempotency-Key on POSTs and Idempotent-Replay on 201', () => {
    for (const d of WRITABLE) {
      const post = doc.paths[`/v1/${d.name}`].post;
      assert.match(post.requestBody.$ref, /^#\/components\/requestBodies\/Create/);
      assert.equal(deref(post.requestBody).required, true);
      assert.ok(post.parameters.some((p: Json) => deref(p).name === 'Idempotency-Key'));
      assert.ok(post.responses['201'].headers['Idempotent-Replay']);
      assert.ok(post.responses['409'], `${d.name} 409`);
      const patch = doc.paths[`/v1/${d.name}/{id}`].patch;
      assert.match(patch.requestBody.$ref, /^#\/components\/requestBodies\/Update/);
      assert.ok(!patch.parameters.some((p: Json) => deref(p).name === 'Idempotency-Key'));
      const del = doc.paths[`/v1/${d.name}/{id}`].delete;
      assert.equal(del.responses['204'].content, undefined);
    }
    const item = deref(doc.components.requestBodies.CreateSaleInput.content['application/json'].schema.properties.items);
    assert.equal(item.minItems, 1);
    assert.equal(item.maxItems, 200);
  });

  test('security: bearer globally; public routes say so; /v1/me needs a key and no scope', () => {
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    assert.equal(doc.components.securitySchemes.bearerAuth.type, 'http');
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
    for (const { path, method, op } of operations()) {
      const isPublic = path === '/v1/openapi.json' || path.startsWith('/errors') || path === '/changelog';
      if (isPublic) {
        assert.deepEqual(op.security, [], `${method} ${path}`);
        assert.equal(op.responses['401'], undefined);
        continue;
      }
      assert.equal(op.security, undefined, `${method} ${path} inherits the bearer scheme`);
      for (const status of ['401', '403', '429', '500', '503']) assert.ok(op.responses[status], `${method} ${path} ${status}`);
    }
    const me = doc.paths['/v1/me'].get;
    assert.match(me.description, /no scope/);
    const meForbidden = deref(me.responses['403']).content['application/problem+json'].schema.allOf[1].properties.type['x-error-codes'];
    assert.deepEqual(meForbidden.sort(), ['api_disabled', 'ip_not_allowed']);
    assert.match(doc.paths['/v1/customers'].get.description, /customers:read/);
  });

  test('problem responses are application/problem+json referencing Problem, and cover every error type', () => {
    const seen = new Set<string>();
    const responses = [
      ...operations().flatMap(({ op }) => Object.entries<Json>(op.responses).filter(([status]) => Number(status) >= 400)),
      ['405', doc.components.responses.MethodNotAllowed] as [string, Json],
    ];
    for (const [status, raw] of responses) {
      const response = deref(raw);
      assert.deepEqual(Object.keys(response.content), ['application/problem+json']);
      const { schema, examples } = response.content['application/problem+json'];
      assert.equal(schema.allOf[0].$ref, '#/components/schemas/Problem');
      assert.equal(schema.allOf[1].properties.status.const, Number(status));
      const type = schema.allOf[1].properties.type;
      assert.equal(type.enum, undefined, 'the type is not an enum of one deployment’s URLs');
      for (const code of type['x-error-codes'] as string[]) {
        assert.match(`http://balcao.test/errors/${code}`, new RegExp(type.pattern), code);
        assert.equal(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status, Number(status), code);
        seen.add(code);
      }
      assert.ok(Object.keys(examples).length > 0);
    }
    // batch_aborted is never a response status: it only appears inside a batch's results, which the batch route describes.
    assert.match(doc.paths['/v1/batch'].post.description, /batch_aborted/);
    seen.add('batch_aborted');
    assert.deepEqual([...seen].sort(), [...ERROR_CODES].sort());
    const problem = doc.components.schemas.Problem;
    assert.deepEqual(problem.required.sort(), ['request_id', 'status', 'title', 'type']);
    assert.equal(problem.properties.errors.items.$ref, '#/components/schemas/FieldError');
  });

  test('headers: X-Request-Id everywhere, X-RateLimit-* on authenticated successes, Retry-After on 429/409, Allow on 405', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, raw] of Object.entries<Json>(op.responses)) {
        const response = deref(raw);
        assert.ok(response.headers?.['X-Request-Id'], `${method} ${path} ${status} X-Request-Id`);
        const authenticatedSuccess = !op.security && Number(status) < 300;
        for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          if (authenticatedSuccess) assert.equal(deref(response.headers[h]).required, true, `${method} ${path} ${status} ${h}`);
          if (op.security || status === '401') assert.equal(response.headers[h], undefined);
        }
        if (status === '429') assert.equal(deref(response.headers['Retry-After']).required, true);
        // Retry-After goes with an Idempotency-Key still held; an external_id_conflict alone has none.
        const codes: string[] =
          response.content?.['application/problem+json']?.schema?.allOf?.[1]?.properties?.type?.['x-error-codes'] ?? [];
        if (status === '409' && codes.includes('idempotency_conflict'))
          assert.equal(deref(response.headers['Retry-After']).required, false);
        if (status === '409' && !codes.includes('idempotency_conflict')) assert.equal(response.headers['Retry-After'], undefined);
      }
    }
    assert.equal(deref(doc.components.responses.MethodNotAllowed.headers.Allow).required, true);
  });

  test('names its shared shapes, so generated clients get named types', () => {
    const schemas = doc.components.schemas;
    for (const name of ['Problem', 'FieldError', 'Pagination', 'Meta', 'Me', 'Customer', 'Sale', 'TransactionItem', 'DealStage'])
      assert.ok(schemas[name], name);
    const list = doc.paths['/v1/customers'].get.responses['200'].content['application/json'].schema;
    const rows = list.properties.data.items;
    assert.ok([rows, ...(rows.anyOf ?? [])].some((x: Json) => x.$ref === '#/components/schemas/Customer'));
    assert.equal(list.properties.pagination.$ref, '#/components/schemas/Pagination');
    const created = doc.paths['/v1/sales'].post.responses['201'].content['application/json'].schema;
    assert.ok(schemas[created.properties.data.$ref.split('/').pop()].required.includes('items'));
    assert.doesNotMatch(text, /x-balcao/);
  });

  test('every example validates against its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, 'doc');
    let count = 0;
    const check = (pointer: string, media: Json) => {
      if (!media.schema) return;
      const validate = ajv.compile({ $ref: `doc#${pointer}/schema` });
      const values = media.example !== undefined ? [media.example] : Object.values<Json>(media.examples ?? {}).map((e) => deref(e).value);
      for (const value of values) {
        count++;
        assert.ok(validate(value), `${pointer}: ${ajv.errorsText(validate.errors)}`);
      }
    };
    const esc = (x: string) => x.replace(/~/g, '~0').replace(/\//g, '~1');
    for (const { path, method, op } of operations()) {
      const base = `/paths/${esc(path)}/${method}`;
      if (op.requestBody && !op.requestBody.$ref)
        for (const [type, media] of Object.entries<Json>(op.requestBody.content)) check(`${base}/requestBody/content/${esc(type)}`, media);
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (response.$ref) continue;
        for (const [type, media] of Object.entries<Json>(response.content ?? {}))
          if (type.includes('json')) check(`${base}/responses/${status}/content/${esc(type)}`, media);
      }
    }
    for (const [name, body] of Object.entries<Json>(doc.components.requestBodies))
      check(`/components/requestBodies/${name}/content/application~1json`, body.content['application/json']);
    for (const [name, response] of Object.entries<Json>(doc.components.responses))
      check(`/components/responses/${name}/content/application~1problem+json`, response.content['application/problem+json']);
    assert.ok(count > 40);
  });
});

describe('the OpenAPI document with BALCAO_ERRORS_URL', () => {
  test('uses that address for the problem types; the description of the types does not depend on it', async () => {
    const s = await startTestServer({ env: { BALCAO_ERRORS_URL: 'https://docs.example.org/balcao/errors' } });
    try {
      const res = await s.request('GET', '/v1/openapi.json');
      const unauthorized = res.body.components.responses.Unauthorized.content['application/problem+json'].schema.allOf[1].properties.type;
      assert.ok(unauthorized['x-error-codes'].includes('invalid_token'));
      assert.doesNotMatch(JSON.stringify(unauthorized), /example\.org|balcao\.test/);
      const problem = await s.request('GET', '/v1/me');
      assert.equal(problem.body.type, 'https://docs.example.org/balcao/errors/invalid_token');
      assert.match(problem.body.type, new RegExp(unauthorized.pattern));
    } finally {
      await s.close();
    }
  });
});
