// The committed description (openapi/v1.json) is the one the server serves, and the breaking-change
// check (scripts/openapi-breaking.ts) refuses what breaks clients and lets the rest through.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { breakingChanges } from '../scripts/openapi-breaking.ts';
import { COMMIT_ENV } from '../scripts/openapi-dump.ts';
import { startTestServer } from './helpers/harness.ts';

type Json = Record<string, any>;
const committed = (): Json => JSON.parse(readFileSync(new URL('../openapi/v1.json', import.meta.url), 'utf8'));

test('openapi/v1.json is the description the server serves (after a change: npm run openapi:commit)', async () => {
  const s = await startTestServer({ env: COMMIT_ENV as Record<string, string> });
  try {
    const served = await s.request('GET', '/v1/openapi.json');
    assert.equal(served.status, 200);
    assert.deepEqual(served.body, committed(), 'openapi/v1.json is stale: run `npm run openapi:commit`');
    // No deployment's address: the server is wherever the description is read from.
    assert.deepEqual(committed().servers, [{ url: '/', description: 'This deployment' }]);
    assert.doesNotMatch(JSON.stringify(committed()), /localhost|127\.0\.0\.1/);
  } finally {
    await s.close();
  }
});

/** A small description: one write with a body, one read with a parameter and a response. */
function fixture(): Json {
  return {
    openapi: '3.1.0',
    paths: {
      '/v1/things': {
        post: {
          requestBody: { $ref: '#/components/requestBodies/CreateThing' },
          responses: { '201': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
        },
        get: {
          parameters: [{ name: 'limit', in: 'query', required: false, schema: { type: 'integer', maximum: 100 } }],
          responses: {
            '200': { content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Thing' } } } } },
          },
        },
      },
    },
    components: {
      requestBodies: {
        CreateThing: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['name'],
                properties: {
                  name: { type: 'string', maxLength: 255 },
                  kind: { type: 'string', enum: ['a', 'b'] },
                  note: { type: ['string', 'null'], maxLength: 5000 },
                  tags: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 20 } },
                },
              },
            },
          },
        },
      },
      schemas: {
        Thing: {
          type: 'object',
          required: ['id', 'name', 'note'],
          properties: { id: { type: 'string', format: 'uuid' }, name: { type: 'string' }, note: { type: ['string', 'null'] } },
        },
      },
    },
  };
}
const body = (doc: Json) => doc.components.requestBodies.CreateThing.content['application/json'].schema;
const changed = (edit: (doc: Json) => void) => {
  const doc = fixture();
  edit(doc);
  return breakingChanges(fixture(), doc);
};

describe('the breaking-change check', () => {
  test('refuses removed fields, new required inputs, narrowed types and removed enum values', () => {
    const cases: [string, (doc: Json) => void, RegExp][] = [
      ['a response field removed', (d) => delete d.components.schemas.Thing.properties.note, /POST \/v1\/things 201\.note: removed/],
      ['a response field no longer required', (d) => d.components.schemas.Thing.required.pop(), /201\.note: no longer always present/],
      [
        'a response field now nullable',
        (d) => (d.components.schemas.Thing.properties.name.type = ['string', 'null']),
        /201\.name: may now be null/,
      ],
      ['an input field removed', (d) => delete body(d).properties.note, /POST \/v1\/things body\.note: removed/],
      ['a new required input field', (d) => body(d).required.push('kind'), /body\.kind: newly required/],
      [
        'a new required parameter',
        (d) => d.paths['/v1/things'].get.parameters.push({ name: 'q', in: 'query', required: true, schema: { type: 'string' } }),
        /GET \/v1\/things parameter query q: new and required/,
      ],
      ['null no longer accepted', (d) => (body(d).properties.note.type = 'string'), /body\.note: no longer accepts null/],
      ['a type changed', (d) => (body(d).properties.name.type = 'integer'), /body\.name: no longer accepts string/],
      ['an enum value removed', (d) => (body(d).properties.kind.enum = ['a']), /body\.kind: enum value\(s\) removed: "b"/],
      ['a maxLength lowered', (d) => (body(d).properties.name.maxLength = 100), /body\.name: maxLength lowered from 255 \(100\)/],
      ['a minimum added', (d) => (d.paths['/v1/things'].get.parameters[0].schema.minimum = 1), /parameter query limit: minimum added/],
      ['an item bound added', (d) => (body(d).properties.tags.items.pattern = '^[a-z]+$'), /body\.tags\[\]: pattern added/],
      ['an operation removed', (d) => delete d.paths['/v1/things'].get, /GET \/v1\/things: operation removed/],
      ['a success response removed', (d) => delete d.paths['/v1/things'].post.responses['201'], /POST \/v1\/things response 201: removed/],
    ];
    for (const [name, edit, expected] of cases) {
      const found = changed(edit);
      assert.ok(
        found.some((line) => expected.test(line)),
        `${name}: ${JSON.stringify(found)}`,
      );
    }
  });

  test('lets through what does not break clients', () => {
    const cases: [string, (doc: Json) => void][] = [
      ['a new optional input field', (d) => (body(d).properties.color = { type: 'string', maxLength: 20 })],
      ['a new response field', (d) => (d.components.schemas.Thing.properties.color = { type: 'string' })],
      ['a bound relaxed', (d) => (body(d).properties.name.maxLength = 500)],
      ['an input enum value added', (d) => body(d).properties.kind.enum.push('c')],
      ['an input now nullable', (d) => (body(d).properties.name.type = ['string', 'null'])],
      ['a new operation', (d) => (d.paths['/v1/other'] = { get: { responses: {} } })],
      ['an integer format named', (d) => (d.paths['/v1/things'].get.parameters[0].schema.format = 'int32')],
      ['deprecated and described', (d) => Object.assign(d.paths['/v1/things'].get, { deprecated: true, description: 'Old.' })],
    ];
    for (const [name, edit] of cases) assert.deepEqual(changed(edit), [], name);
  });

  test('the committed description against itself has none; a field removed from it is found', () => {
    const doc = committed();
    assert.deepEqual(breakingChanges(doc, committed()), []);
    const edited = committed();
    delete edited.components.schemas.Customer.properties.document;
    const found = breakingChanges(doc, edited);
    assert.ok(found.includes('GET /v1/customers/{id} 200.data.document: removed'), JSON.stringify(found.slice(0, 5)));
  });
});
