// CI's guard of the Citus-ready schema (issue 27, docs/scale-out.md). CI cannot build Citus, so this
// reads the catalog of a migrated database (pg_catalog exists on both engines) and fails when the
// schema could no longer be distributed by team_id:
// - every account-owned table (one with a team_id column) has a primary key, and every primary key,
//   unique constraint and unique index of it includes team_id;
// - every foreign key between account-owned tables matches team_id to team_id;
// - an account-owned table refers to other tables only through the reference tables;
// - a table without team_id is one docs/scale-out.md decided on (reference or coordinator table),
//   and never refers to an account-owned table.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Db } from '../src/infra/db/engine/database.ts';
import { openTestDatabase } from './helpers/harness.ts';

/** Replicated to every node (migrations/citus/distribute.sql). */
const REFERENCE_TABLES = ['accounts', 'api_keys'];
/** Stay on the coordinator. */
const COORDINATOR_TABLES = ['idempotency_keys', 'schema_migrations', 'capture_progress', 'capture_outbox', 'operator_audit'];

let db: Db;
let close: () => Promise<void>;

before(async () => {
  const database = await openTestDatabase();
  db = database.db;
  close = async () => {
    await database.close();
    await database.drop();
  };
});
after(async () => close?.());

interface TableRow {
  name: string;
  team_attnum: number | null;
  team_not_null: boolean | null;
}
interface IndexRow {
  table_name: string;
  index_name: string;
  is_primary: boolean;
  columns: number[];
}
interface ForeignKeyRow {
  name: string;
  table_name: string;
  referenced: string;
  columns: number[];
  referenced_columns: number[];
}

async function tables(): Promise<Map<string, TableRow>> {
  const { rows } = await sql<TableRow>`
    SELECT c.relname AS name, a.attnum AS team_attnum, a.attnotnull AS team_not_null
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`.execute(db);
  return new Map(rows.map((r) => [r.name, r]));
}

async function uniqueIndexes(): Promise<IndexRow[]> {
  const { rows } = await sql<{ table_name: string; index_name: string; is_primary: boolean; columns: string }>`
    SELECT t.relname AS table_name, i.relname AS index_name, x.indisprimary AS is_primary, cast(x.indkey as text) AS columns
    FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND x.indisunique`.execute(db);
  return rows.map((r) => ({ ...r, columns: r.columns.split(' ').map(Number) }));
}

async function foreignKeys(): Promise<ForeignKeyRow[]> {
  const { rows } = await sql<{ name: string; table_name: string; referenced: string; columns: string; referenced_columns: string }>`
    SELECT k.conname AS name, t.relname AS table_name, r.relname AS referenced,
           array_to_string(k.conkey, ' ') AS columns, array_to_string(k.confkey, ' ') AS referenced_columns
    FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND k.contype = 'f'`.execute(db);
  return rows.map((r) => ({
    ...r,
    columns: r.columns.split(' ').map(Number),
    referenced_columns: r.referenced_columns.split(' ').map(Number),
  }));
}

const accountOwned = (all: Map<string, TableRow>) => [...all.values()].filter((t) => t.team_attnum !== null);

test('the migrated schema has account-owned tables, each with a NOT NULL team_id', async () => {
  const owned = accountOwned(await tables());
  // The account-owned tables of the first five migrations; a later one may only add to them.
  for (const name of [
    'customers',
    'transactions',
    'transaction_items',
    'tenant_counters',
    'events',
    'webhook_endpoints',
    'webhook_deliveries',
    'webhook_attempts',
  ]) {
    assert.ok(
      owned.some((t) => t.name === name),
      `${name} is account-owned`,
    );
  }
  for (const t of owned) assert.equal(t.team_not_null, true, `${t.name}.team_id is NOT NULL`);
});

test('every account-owned table has a primary key, and every unique key of it includes team_id', async () => {
  const all = await tables();
  const indexes = await uniqueIndexes();
  for (const t of accountOwned(all)) {
    const own = indexes.filter((i) => i.table_name === t.name);
    assert.ok(
      own.some((i) => i.is_primary),
      `${t.name} has a primary key`,
    );
    for (const i of own) {
      assert.ok(i.columns.includes(t.team_attnum as number), `${t.name}: unique index ${i.index_name} includes team_id`);
    }
  }
});

test('foreign keys between account-owned tables match team_id to team_id', async () => {
  const all = await tables();
  for (const fk of await foreignKeys()) {
    const from = all.get(fk.table_name);
    const to = all.get(fk.referenced);
    if (from?.team_attnum == null || to?.team_attnum == null) continue;
    const at = fk.columns.indexOf(from.team_attnum);
    assert.ok(at >= 0, `${fk.table_name}.${fk.name} includes team_id`);
    assert.equal(fk.referenced_columns[at], to.team_attnum, `${fk.table_name}.${fk.name} refers team_id to ${fk.referenced}.team_id`);
  }
});

test('account-owned tables refer to other tables only through the reference tables', async () => {
  const all = await tables();
  for (const fk of await foreignKeys()) {
    if (all.get(fk.table_name)?.team_attnum == null || all.get(fk.referenced)?.team_attnum != null) continue;
    assert.ok(REFERENCE_TABLES.includes(fk.referenced), `${fk.table_name}.${fk.name} refers to ${fk.referenced}, not a reference table`);
  }
});

test('every table without team_id was decided on, and none refers to an account-owned table', async () => {
  const all = await tables();
  const others = [...all.values()].filter((t) => t.team_attnum === null).map((t) => t.name);
  for (const name of others) {
    assert.ok(
      [...REFERENCE_TABLES, ...COORDINATOR_TABLES].includes(name),
      `${name} has no team_id: decide in docs/scale-out.md whether it is a reference or a coordinator table, and list it here`,
    );
  }
  for (const fk of await foreignKeys()) {
    if (all.get(fk.table_name)?.team_attnum != null) continue;
    assert.equal(all.get(fk.referenced)?.team_attnum ?? null, null, `${fk.table_name}.${fk.name} refers to account-owned ${fk.referenced}`);
  }
});
