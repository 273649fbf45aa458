// Read-your-writes needs the WAL position of a key's commits (docs/scale-out.md, "Read replicas").
// A write request runs inside a scope; the PostgreSQL driver then sends `pg_current_wal_insert_lsn()`
// right behind each COMMIT on the same connection (one round trip for both), and notes the answer here.
// Taken after the commit record was inserted, the position is at or past the commit's end: a replica
// that has replayed that far shows the write.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface CommitLsnScope {
  /** The highest commit position of the scope so far (0: nothing committed). */
  lsn: number;
}

const scopes = new AsyncLocalStorage<CommitLsnScope>();

/** Runs `fn` in a new scope whose commits are noted in `scope`. */
export function runInCommitScope<T>(scope: CommitLsnScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/** The scope of the running request, when it is one whose commits are tracked. */
export const currentCommitScope = (): CommitLsnScope | undefined => scopes.getStore();

/** A PostgreSQL LSN (`16/B374D848`) as a number: exact below 2^53 bytes of WAL (8 PiB). */
export function lsnToNumber(text: string | null | undefined): number | null {
  if (!text) return null;
  const slash = text.indexOf('/');
  if (slash < 0) return null;
  const hi = Number.parseInt(text.slice(0, slash), 16);
  const lo = Number.parseInt(text.slice(slash + 1), 16);
  return Number.isFinite(hi) && Number.isFinite(lo) ? hi * 2 ** 32 + lo : null;
}
