// The write checks every writable resource gets, generated from its descriptor and the served
// API description: the tenant wall (another account or mode cannot change a record, unknown ids
// are 404) and the guards (write scope, module). Bodies are the description's own examples.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ResourceDescriptor } from '../../src/resources/descriptor.ts';
import type { TestServer } from './harness.ts';
import { UNLIMITED, writer } from './write-fixtures.ts';

type Json = Record<string, any>;

/** The example request body of an operation, as the API description shows it. */
export function requestExample(s: TestServer, method: 'post' | 'patch', path: string): unknown {
  const doc = JSON.parse(s.app.openapiJson()) as Json;
  const body = doc.paths[path]?.[method]?.requestBody;
  assert.ok(body, `${method.toUpperCase()} ${path} is not in the API description`);
  const target = body.$ref ? doc.components.requestBodies[String(body.$ref).split('/').pop()!] : body;
  // The usual example where there is one: the complete one refers to records (a sale's customer) made elsewhere.
  const { usual, complete } = target.content['application/json'].examples;
  return (usual ?? complete).value;
}

/** The record as GET answers it: the POST response without the includes only POST carries. */
function asRead(d: ResourceDescriptor, created: Json): Json {
  const out = { ...created };
  for (const name of d.write?.createIncludes ?? []) delete out[name];
  return out;
}

export async function assertTenantWall(s: TestServer, d: ResourceDescriptor): Promise<void> {
  const collection = `/v1/${d.name}`;
  const patchBody = requestExample(s, 'patch', `${collection}/{id}`);
  const owner = await writer(s);
  const intruder = await writer(s);
  const ownerTest = await s.createKey(owner.accountId, { test: true });
  const res = await s.request('POST', collection, { key: owner.key, body: requestExample(s, 'post', collection) });
  assert.equal(res.status, 201, `POST ${collection}: ${res.text}`);
  const created = res.body.data as Json;
  for (const key of [intruder.key, ownerTest.key]) {
    const patch = await s.request('PATCH', `${collection}/${created.id}`, { key, body: patchBody });
    assert.equal(patch.status, 404, `${d.name}: PATCH from another tenant`);
    assert.doesNotMatch(patch.text, new RegExp(owner.accountId));
    assert.equal((await s.request('DELETE', `${collection}/${created.id}`, { key })).status, 404, `${d.name}: DELETE from another tenant`);
    assert.equal((await s.request('GET', `${collection}/${created.id}`, { key })).status, 404, `${d.name}: GET from another tenant`);
  }
  for (const id of [randomUUID(), 'x']) {
    assert.equal((await s.request('PATCH', `${collection}/${id}`, { key: owner.key, body: patchBody })).status, 404);
    assert.equal((await s.request('DELETE', `${collection}/${id}`, { key: owner.key })).status, 404);
  }
  assert.deepEqual((await s.request('GET', `${collection}/${created.id}`, { key: owner.key })).body.data, asRead(d, created), d.name);
}

export async function assertWriteGuards(s: TestServer, d: ResourceDescriptor, others: readonly ResourceDescriptor[]): Promise<void> {
  const collection = `/v1/${d.name}`;
  const body = requestExample(s, 'post', collection);
  const reader = await writer(s, { scopes: [`${d.name}:read`] });
  const refused = await s.request('POST', collection, { key: reader.key, body });
  assert.equal(refused.status, 403, `${d.name} without the write scope`);
  assert.match(refused.body.type, /\/insufficient_scope$/);
  const elsewhere = others.find((o) => o.module !== d.module)!;
  const noModule = await s.createAccountWithKey({ rateLimits: UNLIMITED, modules: [elsewhere.module], scopes: [`${d.name}:write`] });
  const missing = await s.request('POST', collection, { key: noModule.key, body });
  assert.equal(missing.status, 403, `${d.name} without its module`);
  assert.match(missing.body.type, /\/module_not_enabled$/);
  assert.equal((await s.request('DELETE', `${collection}/${randomUUID()}`, { key: reader.key })).status, 403);
}
