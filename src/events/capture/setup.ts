// What each engine needs for capture, set up after the migrations (idempotent, and skipped once done for this
// version of it: a mark in schema_migrations):
// - PostgreSQL: a publication of the served tables, whose rows are logged whole (REPLICA IDENTITY FULL: an
//   update's and a delete's old row, for `previous_attributes` and a deleted record's last state). The origin mark,
//   `balcao_mark_origin(text)`, is the migrations' (009): a transactional logical message.
// - The embedded database: a trigger on each served table writing every row change to `capture_outbox`, and
//   `balcao_mark_origin(text)` writing the origin there too (or, for an import, turning the triggers off for the
//   rest of the transaction: an import makes no event).
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Database, Db } from '../../infra/db/engine/database.ts';
import { quoteIdentifier } from '../../infra/db/engine/identifiers.ts';
import { LOCK_ID, migrate } from '../../infra/db/migrate/migrate.ts';
import { SERVED_TABLES } from './served-tables.ts';
import type { Tenant } from '../../domain/tenant.ts';
import { insertScopedText } from '../../infra/db/tenancy/tenancy.ts';

/** The publication the capture subscribes to. */
export const PUBLICATION = 'balcao_capture';
/** The prefix of the logical messages that carry a transaction's origin. */
export const ORIGIN_PREFIX = 'balcao.origin';
/** The origin text of a `balcao import` transaction. */
export const IMPORT_ORIGIN = '{"import":true}';
/** The origin text of a data subject's erasure (`balcao subjects erase`): its events withhold the old values. */
export const ERASURE_ORIGIN = '{"erasure":true}';

/** The table whose rows mark an import's or an erasure's transaction on the account's own node (migration 013). */
export const MARKS_TABLE = 'capture_marks';

/** Raw SQL: the row that marks the transaction of `scope`'s import or erasure with `origin` (Citus reads it; on
 *  PostgreSQL and PGlite, where balcao_mark_origin() marks the transaction, it is only kept). */
export const markOriginText = (scope: Tenant, origin: string) => insertScopedText(MARKS_TABLE, scope, { origin: { value: origin } });

/** The lock the set-up of capture takes: the migrations' own (migrate.ts), so one instance sets up at a time. */
export const SETUP_LOCK = LOCK_ID;

const tables = () => [...SERVED_TABLES.keys()].sort();

function postgresSetup(): string[] {
  const list = tables().map(quoteIdentifier).join(', ');
  return [
    ...tables().map((t) => `ALTER TABLE ${quoteIdentifier(t)} REPLICA IDENTITY FULL`),
    `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '${PUBLICATION}') THEN CREATE PUBLICATION ${PUBLICATION} FOR TABLE ${list}; ELSE ALTER PUBLICATION ${PUBLICATION} SET TABLE ${list}; END IF; END $$`,
  ];
}

function embeddedSetup(): string[] {
  return [
    `CREATE OR REPLACE FUNCTION balcao_capture_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF current_setting('balcao.capture', true) = 'off' THEN RETURN NULL; END IF; INSERT INTO capture_outbox (txid, table_name, op, old_row, new_row) VALUES (txid_current(), TG_TABLE_NAME, lower(TG_OP), CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END); RETURN NULL; END $$`,
    `CREATE OR REPLACE FUNCTION balcao_mark_origin(origin text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN IF origin = '${IMPORT_ORIGIN}' THEN PERFORM set_config('balcao.capture', 'off', true); ELSE INSERT INTO capture_outbox (txid, table_name, op, new_row) VALUES (txid_current(), '', 'origin', to_jsonb(origin)); END IF; RETURN ''; END $$`,
    ...tables().map(
      (t) =>
        `CREATE OR REPLACE TRIGGER balcao_capture AFTER INSERT OR UPDATE OR DELETE ON ${quoteIdentifier(t)} FOR EACH ROW EXECUTE FUNCTION balcao_capture_row()`,
    ),
  ];
}

/** Sets up capture on the database's engine, unless this version of the set-up is there already. */
export async function setUpCapture(database: Pick<Database, 'db' | 'engine'>): Promise<boolean> {
  const statements = database.engine === 'postgres' ? postgresSetup() : embeddedSetup();
  const mark = `capture-setup:${database.engine}:${createHash('sha256').update(statements.join(';')).digest('hex').slice(0, 12)}`;
  const db: Db = database.db;
  const done = await sql<{ name: string }>`SELECT name FROM schema_migrations WHERE name = ${mark}`.execute(db);
  if (done.rows.length > 0) return false;
  await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    // The migrations' lock: one instance sets up, the others find it done.
    await sql`SELECT pg_advisory_xact_lock(${SETUP_LOCK})`.execute(trx);
    const again = await sql<{ name: string }>`SELECT name FROM schema_migrations WHERE name = ${mark}`.execute(trx);
    if (again.rows.length > 0) return;
    for (const statement of statements) await sql.raw(statement).execute(trx);
    await sql`DELETE FROM schema_migrations WHERE name LIKE ${`capture-setup:${database.engine}:%`}`.execute(trx);
    await sql`INSERT INTO schema_migrations (name) VALUES (${mark})`.execute(trx);
  });
  return true;
}

/** The schema migrated and capture set up: what every command that opens the database for serving needs. */
export async function prepareDatabase(database: Pick<Database, 'db' | 'engine'>): Promise<string[]> {
  const applied = await migrate(database.db);
  await setUpCapture(database);
  return applied;
}
