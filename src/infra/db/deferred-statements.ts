// Statements of a transaction that need no answer before the next one (a sale's number, its stored
// response, its event): on PostgreSQL they are sent at once and their answers awaited with the next
// statement or the commit, so the last steps of a write reach the server together. Rows they lock (a
// tenant's counters) are then held while the server runs them, not across round trips through a busy
// event loop. On PGlite, which has no round trip to save, they run at once like any statement.
import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Expression, type RawBuilder, sql } from 'kysely';

/** Turns a deferred statement's failure into the error its caller means (or returns it unchanged). */
export type FailureMeaning = (err: unknown) => unknown;

/** What the driver needs to send a statement deferred, and to hand its answer back later. */
export interface DeferredStatement {
  meaning: FailureMeaning;
  /** Set by a driver that sent the statement without waiting (its executeQuery answered no rows). */
  sent: boolean;
  answered(rows: unknown[]): void;
  failed(err: unknown): void;
}

/** The deferred statements in flight, by the very object Kysely hands the driver (postgres-dialect.ts). */
export const deferredStatements = new WeakMap<CompiledQuery, DeferredStatement>();

/** A transaction (any Kysely handle); structural, so the driver can import this module. */
interface Transaction {
  executeQuery(query: CompiledQuery): Promise<{ rows: unknown[] }>;
}

/**
 * Runs `query` in the transaction `trx` without waiting for its answer where the driver can: its
 * failure, passed through `meaning`, then fails the transaction's next statement or its commit, so a
 * statement whose failure must stop the write has to fail in SQL, not in a check of its result.
 * Resolves once sent, to its rows' promise (answered by the commit at the latest; never rejects).
 */
export async function executeDeferred(
  trx: Transaction,
  query: CompiledQuery,
  meaning: FailureMeaning = (err) => err,
): Promise<{ rows: Promise<unknown[]> }> {
  let answered!: (rows: unknown[]) => void;
  const rows = new Promise<unknown[]>((resolve) => {
    answered = resolve;
  });
  const statement: DeferredStatement = { meaning, sent: false, answered, failed: () => answered([]) };
  deferredStatements.set(query, statement);
  try {
    const result = await trx.executeQuery(query);
    if (!statement.sent) answered(result.rows);
  } catch (err) {
    answered([]);
    throw meaning(err);
  }
  return { rows };
}

/**
 * Sends the statements deferred in `trx` and waits for their answers, with a statement of its own: a
 * failure among them (say, an insert refused) then fails this call, as it would fail the commit.
 */
export async function flushDeferred(trx: Transaction): Promise<void> {
  await trx.executeQuery(CompiledQuery.raw('select 1'));
}

/** A value of a written record known only once a deferred statement has run (the sale's number):
 *  the record carries `token` in its place until then, and stored copies of it are corrected in SQL. */
export interface Placeholder {
  token: string;
  /** The value as SQL can read it in a later statement of the same transaction. */
  value: Expression<string>;
}

export function placeholder(value: Expression<string>): Placeholder {
  return { token: `balcao-pending-${randomUUID()}`, value };
}

/** `text` (a serialized record) with each placeholder's token replaced by its value, as SQL text. */
export function settledText(text: string, placeholders: readonly Placeholder[] = []): RawBuilder<string> {
  return placeholders.reduce<RawBuilder<string>>(
    (settled, p) => sql<string>`replace(${settled}, ${p.token}, ${p.value})`,
    sql<string>`cast(${text} as text)`,
  );
}
