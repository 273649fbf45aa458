// Read-your-writes needs the WAL position of a key's commits (docs/scale-out.md, "Read replicas").
// A write request holds a `CommitPosition` and hands it to each write transaction it opens
// (write-transaction.ts); the PostgreSQL driver then sends `pg_current_wal_insert_lsn()` right behind
// that transaction's COMMIT on the same connection (one round trip for both), and notes the answer in it.
// Taken after the commit record was inserted, the position is at or past the commit's end: a replica
// that has replayed that far shows the write.

export interface CommitPosition {
  /** The highest commit position noted so far (0: nothing committed). */
  lsn: number;
}

/** Notes a commit at `lsn` (null: committed, position unknown, so nothing older may be assumed). */
export function noteCommit(position: CommitPosition, lsn: number | null): void {
  const at = lsn ?? Number.MAX_SAFE_INTEGER;
  if (at > position.lsn) position.lsn = at;
}

/** A PostgreSQL LSN (`16/B374D848`) as a number: exact below 2^53 bytes of WAL (8 PiB). */
export function lsnToNumber(text: string | null | undefined): number | null {
  if (!text) return null;
  const slash = text.indexOf('/');
  if (slash < 0) return null;
  const hi = Number.parseInt(text.slice(0, slash), 16);
  const lo = Number.parseInt(text.slice(slash + 1), 16);
  return Number.isFinite(hi) && Number.isFinite(lo) ? hi * 2 ** 32 + lo : null;
}
