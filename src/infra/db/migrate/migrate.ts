// Versioned migrations: plain SQL files in /migrations, applied in name order, the pending ones
// in one transaction, and recorded in schema_migrations. On PostgreSQL an advisory lock keeps
// several instances starting at once from racing: one applies, the others wait for its commit
// and find nothing to do; instances already serving never take it. The rule a new migration
// must follow (expand, then contract) is in docs/migrations.md.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Db } from '../engine/database.ts';

const MIGRATIONS_DIR = migrationsDir(path.dirname(fileURLToPath(import.meta.url)));
export const LOCK_ID = 4_242_001;

export async function migrate(db: Db): Promise<string[]> {
  const files = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  // The usual start: every migration already applied. One read says so, without the transaction,
  // the lock and the DDL below (a quarter of the embedded database's start-up work).
  if (await allApplied(db, files)) return [];
  const applied: string[] = [];
  await db.transaction().execute(async (tx) => {
    // A migration may rewrite a large table, and may wait for another instance's: no statement timeout here.
    await sql`SET LOCAL statement_timeout = 0`.execute(tx);
    await sql`SELECT pg_advisory_xact_lock(${LOCK_ID})`.execute(tx);
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(
      tx,
    );
    const done = new Set((await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(tx)).rows.map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      for (const statement of splitStatements(fs.readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8'))) {
        await sql.raw(statement).execute(tx);
      }
      await sql`INSERT INTO schema_migrations (name) VALUES (${file})`.execute(tx);
      applied.push(file);
    }
  });
  return applied;
}

/** The package's migrations folder, found upwards from this module: it runs from src/ (tsx) and
 *  from a bundled chunk of dist/, each at its own depth. */
function migrationsDir(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'migrations'))) return path.join(dir, 'migrations');
    if (path.dirname(dir) === dir) throw new Error(`no migrations folder above ${from}`);
  }
}

async function allApplied(db: Db, files: readonly string[]): Promise<boolean> {
  const table = await sql<{ present: boolean }>`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`.execute(db);
  if (!table.rows[0]?.present) return false;
  const names = new Set((await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(db)).rows.map((r) => r.name));
  return files.every((file) => names.has(file));
}

/**
 * Both drivers run one statement per query (PGlite prepares every query), so a migration file
 * is split at semicolons that end a line. Migrations keep to that form: a function body or a DO block
 * stays on one line (007_lz4_responses.sql).
 */
export function splitStatements(text: string): string[] {
  return text
    .replace(/^\s*--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter(Boolean);
}
