// Generated from the descriptors: every resource with a `write` section gets the tenant wall and
// the write guards, with the bodies of the API description's examples. A new writable resource is
// covered here without editing this file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RESOURCES } from '../src/resources/registry.ts';
import { WRITABLE } from '../src/resources/engines/write-routes.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { assertTenantWall, assertWriteGuards } from './helpers/write-wall.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => s?.close());

describe('generated write checks, one per writable resource', () => {
  test('the writable resources are exactly the descriptors with a write section', () => {
    assert.deepEqual(
      WRITABLE.map((d) => d.name),
      RESOURCES.filter((d) => d.write).map((d) => d.name),
    );
    assert.ok(WRITABLE.length >= 4);
  });

  for (const d of WRITABLE) {
    test(`${d.name}: another account or mode cannot change or delete a record; unknown ids are 404`, () => assertTenantWall(s, d));
    test(`${d.name}: writes need the write scope and the module`, () => assertWriteGuards(s, d, RESOURCES));
  }
});
