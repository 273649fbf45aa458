// The two-file recipe of docs/architecture.md, carried out on a fixture: products made writable by
// a write section (file 1) set on their descriptor (file 2), and nothing else. Routes, the API
// description's prose, the tenancy of every statement and the generated write checks follow.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { ResourceDescriptor, WriteDescriptor } from '../src/resources/descriptor.ts';
import { products } from '../src/resources/descriptors/products.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVENT_TYPES, eventTypesOf } from '../src/events/event-types.ts';
import { exportAccount } from '../src/export/export-account.ts';
import { DataTransferError } from '../src/import/import-error.ts';
import { importRegistryOf } from '../src/import/resources.ts';
import { importObject } from '../src/import/stream-import.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { optional, partialOf, W } from '../src/resources/writes/fields.ts';
import { LENGTH } from '../src/schemas/bounds.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { writer } from './helpers/write-fixtures.ts';
import { assertTenantWall, assertWriteGuards } from './helpers/write-wall.ts';

// File 1 of the recipe: src/resources/writes/products.ts would hold this.
const productFields = {
  description: W.textOrNull({ maxLength: LENGTH.note }),
  selling_price: W.money({ examples: [89.9] }),
  ean_code: W.textOrNull({ maxLength: LENGTH.document, examples: ['7891234567895'] }),
};
const productWrite: WriteDescriptor = {
  create: Type.Object({ name: W.text({ minLength: 1, maxLength: 255, examples: ['Ração 10 kg'] }), ...optional(productFields) }),
  update: partialOf({ name: W.text({ minLength: 1, maxLength: 255, examples: ['Ração 15 kg'] }), ...productFields }),
  softDelete: { deleted_at: sql`now()` },
};
// File 2: `write: productWrite` on the descriptor in src/resources/descriptors/products.ts.
const writableProducts: ResourceDescriptor = { ...products, write: productWrite };
const resources = RESOURCES.map((d) => (d === products ? writableProducts : d));

let s: TestServer;
before(async () => {
  s = await startTestServer({ resources });
});
after(async () => s?.close());

describe('a writable resource is its descriptor', () => {
  test('docs/architecture.md gives the two-file recipe', () => {
    const text = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8');
    assert.match(text, /src\/resources\/writes\/<name>\.ts/);
    assert.match(text, /`write: <name>Write`/);
  });

  test('the write routes, their operations and the overview follow from `write`', async () => {
    const doc = JSON.parse(s.app.openapiJson());
    assert.equal(doc.paths['/v1/products'].post.operationId, 'products.create');
    assert.equal(doc.paths['/v1/products/{id}'].patch.operationId, 'products.update');
    const del = doc.paths['/v1/products/{id}'].delete;
    assert.equal(del.summary, 'Deactivate a record of products');
    assert.match(del.description, /`deleted_at` to `now\(\)`/);
    assert.match(doc.info.description, /\(customers, sales, suppliers, expenses, products and read-only resources\)/);
    // The served registry is untouched: products stay read-only there.
    assert.equal(products.write, undefined);
  });

  test('create, update and a soft delete the SQL expresses (deleted_at = now())', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/products', { key, body: { name: 'Coleira', selling_price: 25 } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual([created.body.data.name, created.body.data.selling_price, created.body.data.unit], ['Coleira', 25, 'un']);
    const id = created.body.data.id;
    const updated = await s.request('PATCH', `/v1/products/${id}`, { key, body: { selling_price: 27.5 } });
    assert.deepEqual([updated.status, updated.body.data.selling_price], [200, 27.5]);
    assert.equal((await s.request('DELETE', `/v1/products/${id}`, { key })).status, 204);
    assert.equal((await s.request('GET', `/v1/products/${id}`, { key })).status, 404);
    const stored = await s.db.selectFrom('catalog_items').select('deleted_at').where('id', '=', id).executeTakeFirstOrThrow();
    assert.match(String(stored.deleted_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('its writes record events, shown in the change feed: product.created, product.updated, product.deleted', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/products', { key, body: { name: 'Guia', selling_price: 40 } });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    assert.equal((await s.request('PATCH', `/v1/products/${id}`, { key, body: { selling_price: 42 } })).status, 200);
    assert.equal((await s.request('DELETE', `/v1/products/${id}`, { key })).status, 204);
    const feed = await fetch(`${s.url}/v1/events?sort=created_at&limit=10`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(feed.status, 200);
    const events = ((await feed.json()) as { data: { type: string; data: { object: { id: string }; previous_attributes: unknown } }[] })
      .data;
    assert.deepEqual(
      events.map((e) => [e.type, e.data.object.id]),
      [
        ['product.created', id],
        ['product.updated', id],
        ['product.deleted', id],
      ],
    );
    assert.deepEqual(events[1]?.data.previous_attributes, { selling_price: 40 });
    assert.ok(events[2]?.data.object, 'the deleted record, read back past its `deleted_at IS NULL` condition');
    // The event types (schema enum, webhook patterns and payloads) follow from the registry: every served resource
    // has them, writable or not (its changes are captured whoever makes them).
    assert.deepEqual(
      eventTypesOf(resources).filter((t) => t.startsWith('product.')),
      ['product.created', 'product.updated', 'product.deleted'],
    );
    assert.deepEqual(
      EVENT_TYPES.filter((t) => t.startsWith('product.')),
      ['product.created', 'product.updated', 'product.deleted'],
    );
  });

  test('the generated tenant wall and guards hold for it', async () => {
    await assertTenantWall(s, writableProducts);
    await assertWriteGuards(s, writableProducts, resources);
  });

  test("import and export follow from the descriptor: its key, its table, its write schema's rules", () => {
    const registry = importRegistryOf(resources);
    assert.equal(registry.resources.products?.table, 'catalog_items');
    assert.ok(registry.names.includes('products') && registry.tables.includes('catalog_items'));
    // The write section's bounds become import rules, with no import file touched.
    assert.match(registry.rules.catalog_items?.selling_price?.(-1) ?? '', /at least 0/);
    assert.equal(registry.rules.catalog_items?.selling_price?.(10), undefined);
    assert.equal(importRegistryOf(RESOURCES).rules.catalog_items, undefined, 'the served registry is untouched');
  });

  test('imported through the streaming import with its write rules, and exported', async () => {
    const { account } = await s.createAccountWithKey();
    const registry = importRegistryOf(resources);
    const options = { accountId: account.id, mode: 'live' as const, registry };
    await assert.rejects(importObject(s.database, { products: [{ name: 'Coleira', selling_price: -1 }] }, options), (err) => {
      assert.ok(err instanceof DataTransferError);
      assert.equal(err.message, 'products[0].selling_price: must be at least 0');
      return true;
    });
    const imported = await importObject(s.database, { products: [{ name: 'Coleira', selling_price: 25 }] }, options);
    assert.deepEqual(imported.counts, { products: 1 });
    const out = mkdtempSync(path.join(tmpdir(), 'balcao-recipe-'));
    try {
      const exported = await exportAccount(s.db, {
        accountId: account.id,
        mode: 'live',
        format: 'json',
        out: path.join(out, 'all.json'),
        includeInternal: false,
      });
      assert.equal(exported.counts.products, 1);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
