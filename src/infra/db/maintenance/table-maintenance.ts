// What autovacuum would do where it cannot keep up, or does not exist: planner statistics for tables that have none
// yet, or that have grown well past the size they were analyzed at, and on PGlite the vacuuming of dead rows.
//
// A write transaction runs its statements on the plan its connection made once (postgres-dialect.ts), and a
// foreign key's check on the plan its backend made once. Made while a table had no statistics, or statistics of a
// handful of rows, those plans scan what they should look up: a new sale's next number was found by reading the
// account's every sale, and the items' foreign-key checks read `transactions` sequentially, each costing more with
// every sale until an ANALYZE replaced the plan (docs/performance.md, "the events benchmark drew plans, not
// costs"). On PostgreSQL, autovacuum analyzes a table once 50 rows plus a tenth of it have changed, but only at its
// next visit (a minute by default), which a new database's first burst of writes outruns. PGlite has no
// autovacuum at all: without this, a table written only through the API would never have statistics, and the
// rows the retention purges delete (events, the write log, Idempotency-Keys) would never give their room back.
//
// So each serving process looks every CHECK_EVERY_MS at the sizes the planner sees (pg_class against the files),
// and analyzes the tables that have rows but no statistics, or that have grown by more than a tenth and
// MIN_GROWTH_PAGES since. On PGlite it also vacuums, by autovacuum's own rule, the tables whose dead rows number
// more than 50 plus a fifth of their rows. On a PostgreSQL server in use, autovacuum has done all that first and
// this finds nothing to do. The statements are sent compiled, as raw text: housekeeping, not the API's queries, so
// no query plugin sees them.
import { CompiledQuery } from 'kysely';
import type { Database } from '../engine/database.ts';
import { quoteIdentifier } from '../engine/identifiers.ts';
import { hasSqlState } from '../../../errors/database-errors.ts';
import { SQLSTATE } from '../../../errors/sqlstate.ts';

/** How often the sizes are compared. */
export const CHECK_EVERY_MS = 10_000;

/** A table analyzed at a size is analyzed again once it has grown by a tenth of that and by this many pages too,
 *  so a table of a few rows is not analyzed at every check. */
const MIN_GROWTH_PAGES = 8;

/**
 * The tables of the current schema that need an ANALYZE (rows and no statistics, or grown past the size they were
 * analyzed at) or, where $1 (the embedded engine), a VACUUM (autovacuum's default rule: more dead rows than 50
 * plus a fifth of the table's). Only those the connecting role may maintain (it owns them, or is a superuser:
 * PostgreSQL skips the others with a warning, and they would be listed again at every check). `reltuples` is -1
 * until a table's first ANALYZE or VACUUM; `relpages` is its size in pages then. The dead rows are counted in the
 * cumulative statistics, which a session reports at most once a second.
 */
const TABLES_DUE = `
  SELECT name, vacuum FROM (
    SELECT c.relname AS name,
      c.reltuples < 0 OR size.pages > c.relpages * 1.1 + ${MIN_GROWTH_PAGES} AS stale,
      $1::boolean AND coalesce(s.n_dead_tup, 0) > 50 + 0.2 * greatest(c.reltuples, 0) AS vacuum
    FROM pg_class c
    CROSS JOIN LATERAL (SELECT pg_relation_size(c.oid) / current_setting('block_size')::int AS pages) size
    LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND pg_has_role(c.relowner, 'USAGE')
      AND size.pages > 0
  ) due
  WHERE stale OR vacuum
  ORDER BY name`;

/** What one check did: the tables analyzed, and those vacuumed (and analyzed with it). */
export interface Maintained {
  analyzed: string[];
  vacuumed: string[];
}

/** Analyzes (and on PGlite vacuums) the tables TABLES_DUE names, one by one. A table another session holds locked
 *  (vacuuming, analyzing, dropping it) is skipped (`SKIP_LOCKED`), and so is one dropped since it was listed: the
 *  next check sees them again if they still need it. */
export async function maintainTables(database: Pick<Database, 'db' | 'engine'>): Promise<Maintained> {
  const embedded = database.engine === 'pglite';
  const { rows } = await database.db.executeQuery<{ name: string; vacuum: boolean }>(CompiledQuery.raw(TABLES_DUE, [embedded]));
  const done: Maintained = { analyzed: [], vacuumed: [] };
  for (const { name, vacuum } of rows) {
    try {
      if (vacuum) {
        // VACUUM cannot run in a transaction; on PGlite a statement alone has the one connection as a transaction would.
        await database.db.executeQuery(CompiledQuery.raw(`VACUUM (ANALYZE, SKIP_LOCKED) ${quoteIdentifier(name)}`));
        done.vacuumed.push(name);
        continue;
      }
      // A transaction: on PGlite, Kysely's one connection is then this statement's until it ends.
      await database.db.transaction().execute(async (trx) => {
        // ANALYZE samples at most 30 000 rows of a table, but the API's statement bound is for requests.
        if (!embedded) await trx.executeQuery(CompiledQuery.raw('SET LOCAL statement_timeout = 0'));
        await trx.executeQuery(CompiledQuery.raw(`ANALYZE (SKIP_LOCKED) ${quoteIdentifier(name)}`));
      });
      done.analyzed.push(name);
    } catch (err) {
      if (!hasSqlState(err, SQLSTATE.undefinedTable)) throw err;
    }
  }
  return done;
}

export interface TableMaintenanceLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** The check every CHECK_EVERY_MS of a serving process, started with the app and stopped with it. */
export class TableMaintenance {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private failing = false;
  private stopped = false;

  constructor(
    private readonly database: Pick<Database, 'db' | 'engine'>,
    private readonly log: TableMaintenanceLog,
    private readonly everyMs = CHECK_EVERY_MS,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), this.everyMs).unref();
  }

  /** Stops the checks; one under way ends on its own (the database is closed after the app). */
  close(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** One check, unless one is under way. A failure (the database away) is logged once until a check succeeds. */
  async check(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      const done = await maintainTables(this.database);
      this.failing = false;
      if (done.analyzed.length > 0 || done.vacuumed.length > 0) this.log.info(done, 'table maintenance: ANALYZE or VACUUM of due tables');
    } catch (err) {
      if (!this.failing && !this.stopped) this.log.warn({ err }, 'table maintenance: the check failed');
      this.failing = true;
    } finally {
      this.running = false;
    }
  }
}
