// Where a capture stands (capture_progress, one row per source), moved in the same transaction as the events it
// recorded, by compare-and-set from the value the capturer read: a batch captured twice (an old capturer not yet
// aware that another took over) fails instead of recording its events again.
import { sql } from 'kysely';
import { beliefFailed, unlessNoneProve } from '../../infra/db/statements/belief-check.ts';
import type { WriteTransaction } from '../../infra/db/statements/write-transaction.ts';

/** Another capturer moved the position: this one's view is stale, and it starts over from the table. */
export class CaptureOvertaken extends Error {
  constructor(source: string) {
    super(`capture of ${source}: the position moved under this capturer`);
  }
}

/** Moves `source` from `from` to `to` in `tx` (sent ahead); the transaction fails with CaptureOvertaken when the
 *  position is no longer `from`. */
export async function movePosition(tx: WriteTransaction, source: string, from: number, to: number): Promise<void> {
  await tx.sendAhead(
    sql`WITH moved AS (UPDATE capture_progress SET position = ${to}, updated_at = now()
      WHERE source = ${source} AND position = ${from} RETURNING 1)
      SELECT ${unlessNoneProve(sql<number>`(SELECT count(*) FROM moved)`)} AS moved`.compile(tx.db),
    (err) => (beliefFailed(err) ? new CaptureOvertaken(source) : err),
  );
}
