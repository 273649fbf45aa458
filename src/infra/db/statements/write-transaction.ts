// A write's transaction, asked for explicitly with what the driver should do for it: which write lane it queues on
// (write-lanes.ts) and where its commit position goes (commit-lsn.ts). What the driver can do for a write's
// statements is a method of the transaction it hands out (`sendAhead`), not a side channel the driver looks up:
// nothing rides on async context or on the identity of a compiled query. PostgreSQL's connection implements
// the abilities (postgres-dialect.ts); any other connection (PGlite, which has no round trip to save) gets the
// trivial ones: statements run at once, no lane, no commit position.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  SingleConnectionProvider,
  Transaction,
} from 'kysely';
import type { CommitPosition } from './commit-lsn.ts';
import { asItIs, type DeferredStatement, deferredStatement, type FailureMeaning, type SentAhead } from './send-ahead.ts';
import type { DB } from '../engine/tables.ts';
import { connectionTracer, engineConnection } from '../engine/traced-driver.ts';

/** A handle of the database (database.ts `Db`, not imported: the driver imports this module). */
type Db = Kysely<DB>;

export interface WriteTransactionOptions {
  /** The write lane (a tenant's) to queue on, where the database has lanes; only this transaction takes it. */
  lane?: string | undefined;
  /** Where the driver notes the commit's WAL position (read-your-writes), when it can read one. */
  commitPosition?: CommitPosition | undefined;
}

/** A write's open transaction: its Kysely handle, and what the driver can do for its statements. */
export interface WriteTransaction {
  readonly db: Db;
  /**
   * Runs `query` without waiting for its answer where the driver can (PostgreSQL): it travels with the next
   * statement or the COMMIT, and its failure (through `meaning`) fails that one, so a statement whose failure must
   * stop the write has to fail in SQL. Where it cannot (PGlite) it runs at once and a failure is thrown here.
   * `last`: nothing but the COMMIT follows it. Where it is also the first (PostgreSQL, no transaction pooler), it is
   * sent without BEGIN and COMMIT and commits by itself, all or nothing: two messages fewer.
   */
  sendAhead(query: CompiledQuery, meaning?: FailureMeaning, last?: boolean): Promise<SentAhead>;
}

/** The driver abilities a connection offers write transactions. */
export interface WriteConnection {
  beginWrite(options: WriteTransactionOptions): Promise<void>;
  /** Sends `query`; `statement` hears its answer. May resolve before the answer (PostgreSQL). `last`: see
   *  WriteTransaction. */
  sendAhead(query: CompiledQuery, statement: DeferredStatement, last?: boolean): Promise<void>;
  commitWrite(): Promise<void>;
  rollbackWrite(): Promise<void>;
}

const isWriteConnection = (connection: DatabaseConnection): connection is DatabaseConnection & WriteConnection =>
  typeof (connection as Partial<WriteConnection>).beginWrite === 'function';

/** A connection's abilities when it has none of its own: plain BEGIN/COMMIT, and every statement awaited. */
function immediate(connection: DatabaseConnection): WriteConnection {
  const run = (text: string) => connection.executeQuery(raw(text)).then(() => undefined);
  return {
    beginWrite: () => run('begin'),
    async sendAhead(query, statement) {
      const result = await connection.executeQuery(query);
      statement.answered(result.rows);
    },
    commitWrite: () => run('commit'),
    rollbackWrite: () => run('rollback'),
  };
}

const raw = (text: string): CompiledQuery => CompiledQuery.raw(text);

/** The handle's driver and dialect: a transaction's handle never opens, ends or destroys anything itself. */
const NOTHING_OF_ITS_OWN = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('a write transaction handle has no driver of its own');
    },
  },
) as Driver & Dialect;

/** Runs `fn` in a new transaction of `db` with `options`; commits what it did, or rolls back when it throws. */
export async function writeTransaction<T>(db: Db, options: WriteTransactionOptions, fn: (tx: WriteTransaction) => Promise<T>): Promise<T> {
  const executor = db.getExecutor();
  return executor.provideConnection(async (given) => {
    const own = engineConnection(given);
    const abilities = isWriteConnection(own) ? own : immediate(given);
    const tracer = connectionTracer(given);
    // Traced like the statements Kysely sends (traced-driver.ts): what goes past Kysely gets its span here.
    const connection: WriteConnection = tracer
      ? {
          beginWrite: (options) => abilities.beginWrite(options),
          sendAhead: (query, statement, last) => tracer.statement(query.sql, () => abilities.sendAhead(query, statement, last)),
          commitWrite: () => tracer.statement('COMMIT', () => abilities.commitWrite()),
          rollbackWrite: () => tracer.statement('ROLLBACK', () => abilities.rollbackWrite()),
        }
      : abilities;
    const handle: Db = new Transaction<DB>({
      config: { dialect: NOTHING_OF_ITS_OWN },
      dialect: NOTHING_OF_ITS_OWN,
      driver: NOTHING_OF_ITS_OWN,
      executor: executor.withConnectionProvider(new SingleConnectionProvider(given)),
    });
    const tx: WriteTransaction = {
      db: handle,
      async sendAhead(query, meaning = asItIs, last = false) {
        const { statement, rows } = deferredStatement(meaning);
        try {
          await connection.sendAhead(query, statement, last);
        } catch (err) {
          const meant = meaning(err);
          statement.failed(err);
          throw meant;
        }
        return { rows };
      },
    };
    await connection.beginWrite(options);
    try {
      const result = await fn(tx);
      await connection.commitWrite();
      return result;
    } catch (err) {
      await connection.rollbackWrite();
      throw err;
    }
  });
}
