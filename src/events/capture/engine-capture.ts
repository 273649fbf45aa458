// The capture of the database's engine, and the wait for it that commands use.
import { sql } from 'kysely';
import type { Database, Db } from '../../infra/db/engine/database.ts';
import { type CaptureLog, type ChangeCapture, OutboxCapture, slotConfirmed, walInsertPosition } from './change-capture.ts';
import { citusNodes, openNode, PostgresCapture } from './postgres-capture.ts';
import { slotNameFor } from './replication-stream.ts';

export function changeCapture(database: Database, options: { url?: string; log: CaptureLog }): ChangeCapture {
  if (database.engine === 'pglite') return new OutboxCapture(database.db, options.log);
  return new PostgresCapture(database.db, { url: options.url ?? '', log: options.log });
}

/**
 * Waits until the changes committed so far are events, at most `withinMs`: true once they are (at once on the
 * embedded database, whose change log is read by whoever holds it), false when no capture passed them in time (no
 * server runs, or it is far behind). A command that rewrites what events hold (a data subject's erasure) waits first,
 * so no event of an earlier change is made after it. On Citus, every node's slot must pass its node's position.
 */
export async function capturedUpToNow(
  database: Pick<Database, 'db' | 'engine'> & { sessionUrl?: string },
  withinMs: number,
): Promise<boolean> {
  if (database.engine === 'pglite') return true;
  const deadline = Date.now() + withinMs;
  const slot = slotNameFor((await currentDatabase(database.db)) ?? '');
  const nodes = (await citusNodes(database.db)) ?? [{ host: '', port: 0, coordinator: true }];
  for (const node of nodes) {
    const worker = node.coordinator ? undefined : await openNode(database.sessionUrl ?? '', node);
    try {
      if (!(await slotPassesNow(worker?.db ?? database.db, slot, deadline))) return false;
    } finally {
      await worker?.close();
    }
  }
  return true;
}

async function slotPassesNow(db: Db, slot: string, deadline: number): Promise<boolean> {
  const target = await walInsertPosition(db);
  for (;;) {
    if (((await slotConfirmed(db, slot)) ?? 0) >= target) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function currentDatabase(db: Db): Promise<string | undefined> {
  const { rows } = await sql<{ db: string }>`SELECT current_database() AS db`.execute(db);
  return rows[0]?.db;
}
