// Planner statistics for tables that have none yet, or that have grown well past the size they were analyzed at.
//
// A write transaction runs its statements on the plan its connection made once (postgres-dialect.ts), and a
// foreign key's check on the plan its backend made once. Made while a table had no statistics, or statistics of a
// handful of rows, those plans scan what they should look up: a new sale's next number was found by reading the
// account's every sale, and the items' foreign-key checks read `transactions` sequentially, each costing more with
// every sale until an ANALYZE replaced the plan (docs/performance.md, "the events benchmark drew plans, not
// costs"). On PostgreSQL, autovacuum analyzes a table once 50 rows plus a tenth of it have changed, but only at its
// next visit (a minute by default), which a new database's first burst of writes outruns. PGlite has no
// autovacuum at all: without this, a table written only through the API would never have statistics.
//
// So each serving process looks every CHECK_EVERY_MS at the sizes the planner sees (pg_class against the files),
// and analyzes the tables that have rows but no statistics, or that have grown by more than a tenth and
// MIN_GROWTH_PAGES since. On a server in use, autovacuum has done that first and this finds nothing to do.
// The statements are sent compiled, as raw text: housekeeping, not the API's queries, so no query plugin sees them.
import { CompiledQuery } from 'kysely';
import type { Database } from './database.ts';

/** How often the sizes are compared. */
export const CHECK_EVERY_MS = 10_000;

/** A table analyzed at a size is analyzed again once it has grown by a tenth of that and by this many pages too,
 *  so a table of a few rows is not analyzed at every check. */
const MIN_GROWTH_PAGES = 8;

/** The tables of the current schema with rows and no statistics, or grown past the size they were analyzed at; only
 *  those the connecting role may analyze (it owns them, or is a superuser: PostgreSQL skips the others with a warning,
 *  and they would be listed again at every check). `reltuples` is -1 until a table's first ANALYZE (or VACUUM);
 *  `relpages` is its size in pages then. */
const GROWN_TABLES = `
  SELECT c.relname AS name
  FROM pg_class c
  CROSS JOIN LATERAL (SELECT pg_relation_size(c.oid) / current_setting('block_size')::int AS pages) size
  WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND pg_has_role(c.relowner, 'USAGE')
    AND size.pages > 0
    AND (c.reltuples < 0 OR size.pages > c.relpages * 1.1 + ${MIN_GROWTH_PAGES})
  ORDER BY c.relname`;

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Analyzes the tables GROWN_TABLES names, one by one; answers the names of those analyzed. A table another session
 *  holds locked (vacuuming, analyzing, dropping it) is skipped (`SKIP_LOCKED`), and so is one dropped since it was
 *  listed: the next check sees them again if they still need it. */
export async function analyzeGrownTables(database: Pick<Database, 'db' | 'engine'>): Promise<string[]> {
  const { rows } = await database.db.executeQuery<{ name: string }>(CompiledQuery.raw(GROWN_TABLES));
  const analyzed: string[] = [];
  for (const { name } of rows) {
    try {
      // A transaction: on PGlite, Kysely's one connection is then this statement's until it ends.
      await database.db.transaction().execute(async (trx) => {
        // ANALYZE samples at most 30 000 rows of a table, but the API's statement bound is for requests.
        if (database.engine === 'postgres') await trx.executeQuery(CompiledQuery.raw('SET LOCAL statement_timeout = 0'));
        await trx.executeQuery(CompiledQuery.raw(`ANALYZE (SKIP_LOCKED) ${quoteIdentifier(name)}`));
      });
      analyzed.push(name);
    } catch (err) {
      if ((err as { code?: unknown }).code !== UNDEFINED_TABLE) throw err;
    }
  }
  return analyzed;
}

const UNDEFINED_TABLE = '42P01';

export interface PlannerStatisticsLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** The check every CHECK_EVERY_MS of a serving process, started with the app and stopped with it. */
export class PlannerStatistics {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private failing = false;
  private stopped = false;

  constructor(
    private readonly database: Pick<Database, 'db' | 'engine'>,
    private readonly log: PlannerStatisticsLog,
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
      const analyzed = await analyzeGrownTables(this.database);
      this.failing = false;
      if (analyzed.length > 0) this.log.info({ tables: analyzed }, 'planner statistics: ANALYZE of new or grown tables');
    } catch (err) {
      if (!this.failing && !this.stopped) this.log.warn({ err }, 'planner statistics: the check failed');
      this.failing = true;
    } finally {
      this.running = false;
    }
  }
}
