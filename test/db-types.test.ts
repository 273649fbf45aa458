// The typed tables (src/infra/db/engine/tables.ts) are generated from the migrations: a migration that changes a
// table without `npm run db:types` fails here, before a query typed against the old shape reaches a user.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { TABLES_FILE, tablesSource } from '../scripts/db-types.ts';

test('src/infra/db/engine/tables.ts is what the migrations generate (npm run db:types)', async () => {
  const generated = await tablesSource();
  assert.match(generated, /export interface DB \{/);
  assert.equal(fs.readFileSync(TABLES_FILE, 'utf8'), generated, 'stale: run `npm run db:types` and commit src/infra/db/engine/tables.ts');
});
