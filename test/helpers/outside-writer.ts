// Another writer of a served database, as the platform's own application is: plain SQL in transactions of its own,
// with no mark of Balcão's. On PostgreSQL a connection of its own to the test's database; on the embedded database
// (held by the test's process) the same engine through the test's own handle, past the API.
import { type Kysely, sql } from 'kysely';
import postgres from 'postgres';
import type { Database } from '../../src/infra/db/engine/database.ts';

export interface OutsideWriter {
  /** Runs the statements in one transaction, committed. */
  commit(...statements: string[]): Promise<void>;
  /** Runs the statements in one transaction, then rolls it back. */
  rollBack(...statements: string[]): Promise<void>;
  close(): Promise<void>;
}

const ROLLED_BACK = new Error('rolled back on purpose');

export function outsideWriter(database: Pick<Database, 'db' | 'engine' | 'sessionUrl'>): OutsideWriter {
  if (database.engine === 'postgres') {
    const client = postgres(database.sessionUrl as string, { max: 1, onnotice: () => {} });
    const run = (statements: string[], rollBack: boolean) =>
      client
        .begin(async (tx) => {
          for (const statement of statements) await tx.unsafe(statement);
          if (rollBack) throw ROLLED_BACK;
        })
        .then(
          () => undefined,
          (err: unknown) => {
            if (err !== ROLLED_BACK) throw err;
          },
        );
    return {
      commit: (...statements) => run(statements, false),
      rollBack: (...statements) => run(statements, true),
      close: () => client.end(),
    };
  }
  const db = database.db as unknown as Kysely<any>;
  const run = (statements: string[], rollBack: boolean) =>
    db
      .transaction()
      .execute(async (trx) => {
        for (const statement of statements) await sql.raw(statement).execute(trx);
        if (rollBack) throw ROLLED_BACK;
      })
      .then(
        () => undefined,
        (err: unknown) => {
          if (err !== ROLLED_BACK) throw err;
        },
      );
  return { commit: (...s) => run(s, false), rollBack: (...s) => run(s, true), close: async () => {} };
}
