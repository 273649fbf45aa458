// One transaction on the driver under Kysely, with COPY: the bulk import writes every row in it,
// so nothing is visible before the commit, and a failure, a crash or a kill -9 leaves nothing.
// PostgreSQL: `COPY … FROM STDIN` through postgres.js; PGlite: `COPY … FROM '/dev/blob'`.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DatabaseDriver } from '../infra/db/database.ts';

export interface BulkSession {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Loads rows given in COPY's text format (tab-separated, `\N` for null, one row per line). */
  copyIn(table: string, columns: readonly string[], text: string): Promise<void>;
}

export const quoteIdentifier = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

const copyStatement = (table: string, columns: readonly string[], from: string) =>
  `COPY ${quoteIdentifier(table)} (${columns.map(quoteIdentifier).join(', ')}) FROM ${from}`;

/** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
export async function inBulkTransaction<T>(driver: DatabaseDriver, fn: (session: BulkSession) => Promise<T>): Promise<T> {
  if (driver.engine === 'postgres') {
    return (await driver.sql.begin(async (tx) =>
      fn({
        query: async <R>(text: string, params: readonly unknown[] = []) => (await tx.unsafe(text, params as never[])) as unknown as R[],
        copyIn: async (table, columns, text) => {
          const writable = await tx.unsafe(copyStatement(table, columns, 'STDIN')).writable();
          await pipeline(Readable.from([text]), writable);
        },
      }),
    )) as T;
  }
  return driver.pg.transaction(async (tx) =>
    fn({
      query: async <R>(text: string, params: readonly unknown[] = []) => (await tx.query<R>(text, params as unknown[])).rows,
      copyIn: async (table, columns, text) => {
        await tx.query(copyStatement(table, columns, `'/dev/blob'`), [], { blob: new Blob([text]) });
      },
    }),
  );
}
