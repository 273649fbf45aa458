// One transaction on the driver under Kysely, with COPY: the bulk import writes every row in it,
// so nothing is visible before the commit, and a failure, a crash or a kill -9 leaves nothing.
// PostgreSQL: `COPY … FROM STDIN` through postgres.js; PGlite: `COPY … FROM '/dev/blob'`.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { DatabaseDriver } from '../infra/db/engine/database.ts';
import { IMPORT_ORIGIN } from '../events/capture/setup.ts';
import { quoteIdentifier } from '../infra/db/engine/identifiers.ts';

export interface BulkSession {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Starts loading rows into `columns` of `table`; no other statement may run until the copy has ended. */
  openCopy(table: string, columns: readonly string[]): OpenCopy;
}

/** One COPY, fed in parts. Rows are COPY's text format as UTF-8 (tab-separated, `\N` for null, one per line). */
export interface OpenCopy {
  /** Resolves once the driver has taken the rows (PostgreSQL: handed to the socket, while the server still
   *  loads the parts before); rejects with the server's refusal. */
  write(rows: Buffer): Promise<void>;
  /** Resolves once the server has every row; rejects with its refusal. */
  end(): Promise<void>;
}

const copyStatement = (table: string, columns: readonly string[], from: string) =>
  `COPY ${quoteIdentifier(table)} (${columns.map(quoteIdentifier).join(', ')}) FROM ${from}`;

/** Every import into one database takes this transaction-scoped lock first: imports run one after the other. */
const IMPORT_LOCK = 'SELECT pg_advisory_xact_lock(hashtext($1)::bigint)';
export const IMPORT_LOCK_NAME = 'balcao import';
/** An import loads history, not changes: its transaction is marked so capture makes no event of it (docs/events.md). */
const MARK_IMPORT = 'SELECT balcao_mark_origin($1)';

/** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
export async function inBulkTransaction<T>(driver: DatabaseDriver, fn: (session: BulkSession) => Promise<T>): Promise<T> {
  if (driver.engine === 'postgres') {
    return (await driver.sql.begin(async (tx) => {
      // The API's statement and idle bounds are for requests: one COPY of a large batch, or the wait
      // for another import's lock, may take longer. A killed import still ends its transaction (the
      // socket closes).
      await tx.unsafe('SET LOCAL statement_timeout = 0');
      await tx.unsafe('SET LOCAL idle_in_transaction_session_timeout = 0');
      // Two imports of the same ids would wait on each other's rows; one after the other, the
      // second finds the first's rows and names them.
      await tx.unsafe(IMPORT_LOCK, [IMPORT_LOCK_NAME]);
      await tx.unsafe(MARK_IMPORT, [IMPORT_ORIGIN]);
      return fn({
        query: async <R>(text: string, params: readonly unknown[] = []) => (await tx.unsafe(text, params as never[])) as unknown as R[],
        openCopy: (table, columns) => {
          const query = tx.unsafe(copyStatement(table, columns, 'STDIN'));
          const refused = settledOnRefusal(query as unknown as { reject: (err: unknown) => void });
          // A refusal destroys the stream with the server's error, reported through `refused`; the listener
          // keeps that 'error' event from being thrown while no write is waiting.
          const opened = Promise.race([(query.writable() as Promise<Writable>).then((w) => w.on('error', () => {})), refused]);
          opened.catch(() => {});
          return {
            async write(rows) {
              const writable = await opened;
              if (!writable.write(rows)) await Promise.race([once(writable, 'drain'), refused]);
            },
            async end() {
              const writable = await opened;
              writable.end();
              await Promise.race([finished(writable), refused]);
            },
          };
        },
      });
    })) as T;
  }
  return driver.pg.transaction(async (tx) => {
    await tx.query(MARK_IMPORT, [IMPORT_ORIGIN]);
    return fn({
      query: async <R>(text: string, params: readonly unknown[] = []) => (await tx.query<R>(text, params as unknown[])).rows,
      // PGlite copies from a blob, in one statement at the end: the parts wait in memory (the caller bounds them).
      openCopy: (table, columns) => {
        const parts: Uint8Array<ArrayBuffer>[] = [];
        return {
          async write(rows) {
            parts.push(rows as Uint8Array<ArrayBuffer>);
          },
          async end() {
            if (parts.length > 0) await tx.query(copyStatement(table, columns, `'/dev/blob'`), [], { blob: new Blob(parts) });
          },
        };
      },
    });
  });
}

/**
 * Rejects with the server's error when it refuses a COPY. postgres.js (3.4) resolves a COPY query
 * with its stream, then reports a refusal through the query's `reject`, a no-op by then: when the
 * refusal comes after the stream's end (a duplicate key in the last rows), the stream's `finish`
 * never comes and the import would hang. Listening on `reject` settles it with the error.
 */
function settledOnRefusal(query: { reject: (err: unknown) => void }): Promise<never> {
  const refused = new Promise<never>((_, reject) => {
    const original = query.reject.bind(query);
    query.reject = (err: unknown) => {
      original(err);
      reject(err);
    };
  });
  refused.catch(() => {});
  return refused;
}
