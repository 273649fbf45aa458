// Waits until everything committed so far is events: the change capture makes them after the commit
// (src/events/capture), so a test that reads the events or deliveries tables directly waits for it first. On
// PostgreSQL the slot's confirmed position passes the WAL position of now; on the embedded database the
// change log is empty.
import { sql } from 'kysely';
import type { Database } from '../../src/infra/db/database.ts';
import { until } from './poll.ts';

export async function captured(database: Pick<Database, 'db' | 'engine'>, withinMs = 30_000): Promise<void> {
  const { db } = database;
  if (database.engine === 'pglite') {
    await until(
      'the change log captured',
      async () => Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM capture_outbox`.execute(db)).rows[0]?.n) === 0,
      { withinMs },
    );
    return;
  }
  const { rows } = await sql<{ at: string }>`SELECT (pg_current_wal_lsn() - '0/0')::text AS at`.execute(db);
  const target = Number(rows[0]?.at);
  await until(
    'the changes committed so far captured',
    async () => {
      const slot = await sql<{ at: string | null }>`SELECT (confirmed_flush_lsn - '0/0')::text AS at FROM pg_replication_slots
        WHERE database = current_database() AND slot_name LIKE 'balcao_%'`.execute(db);
      return Number(slot.rows[0]?.at ?? 0) >= target;
    },
    { withinMs },
  );
}
