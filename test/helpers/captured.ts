// Waits until everything committed so far is events: the change capture makes them after the commit
// (src/events/capture), so a test that reads the events or deliveries tables directly waits for it first. On
// PostgreSQL the slot's confirmed position passes the WAL position of now (capturedUpToNow); on the embedded
// database the change log is empty.
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { capturedUpToNow } from '../../src/events/capture/engine-capture.ts';
import type { Database } from '../../src/infra/db/engine/database.ts';
import { until } from './poll.ts';

export async function captured(database: Pick<Database, 'db' | 'engine'>, withinMs = 30_000): Promise<void> {
  if (database.engine === 'pglite') {
    await until(
      'the change log captured',
      async () => Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM capture_outbox`.execute(database.db)).rows[0]?.n) === 0,
      { withinMs },
    );
    return;
  }
  assert.ok(await capturedUpToNow(database, withinMs), `the changes committed so far captured within ${withinMs} ms`);
}
