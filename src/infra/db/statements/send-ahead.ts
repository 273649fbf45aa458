// Statements of a transaction sent ahead of their answer (a sale's items, its number, its stored response,
// its event): on PostgreSQL they are sent at once and their answers awaited with the next statement or the
// commit, so the steps of a write reach the server together, in as few round trips as the write allows. Rows they lock (a
// tenant's counters) are then held while the server runs them, not across round trips through a busy
// event loop. On PGlite, which has no round trip to save, they run at once like any statement. A write
// transaction sends them (write-transaction.ts); this module holds what both sides of that share.
import { randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { boundValue, builtShape, composedShape, type SqlShape } from './sql-shape.ts';

/** Turns a failure of a statement sent ahead into the error its caller means (or returns it unchanged). */
export type FailureMeaning = (err: unknown) => unknown;

/** The meaning of a statement whose failures mean themselves. */
export const asItIs: FailureMeaning = (err) => err;

/**
 * The meanings of a statement's failure, each told of it: a statement relying on several beliefs (a sale counter's,
 * say) cannot say which check failed, so every belief it relied on is dropped; the first meaning that
 * makes something of the failure answers.
 */
export function everyMeaning(meanings: readonly FailureMeaning[]): FailureMeaning {
  return (err) => {
    let meant: unknown = err;
    for (const meaning of meanings) {
      const m = meaning(err);
      if (meant === err) meant = m;
    }
    return meant;
  };
}

/** What the driver needs to send a statement ahead, and to hand its answer back later. */
export interface DeferredStatement {
  meaning: FailureMeaning;
  answered(rows: unknown[]): void;
  /** Takes the driver's failure; the statement's rows reject with its meaning. */
  failed(err: unknown): void;
}

/** A statement sent ahead of its answer. */
export interface SentAhead {
  /** Its rows once answered, or its failure (through its `meaning`). Awaiting it is optional: a failure also
   *  fails the transaction's next statement or its commit. */
  rows: Promise<unknown[]>;
}

/** A statement to send ahead (write-transaction.ts `sendAhead`), and the rows its answer settles. */
export function deferredStatement(meaning: FailureMeaning): { statement: DeferredStatement; rows: Promise<unknown[]> } {
  let answered!: (rows: unknown[]) => void;
  let failed!: (err: unknown) => void;
  const rows = new Promise<unknown[]>((resolve, reject) => {
    answered = resolve;
    failed = reject;
  });
  rows.catch(() => {}); // reported by the next statement when nobody awaits it
  return { statement: { meaning, answered, failed: (err) => failed(meaning(err)) }, rows };
}

/** A value of a written record known only once a statement sent ahead has run (the sale's number):
 *  the record carries `token` in its place until then, and stored copies of it are corrected in SQL. */
export interface Placeholder {
  token: string;
  /** The value as SQL can read it in a later statement of the same transaction. */
  value: SqlShape<string>;
}

const TOKEN_PREFIX = 'balcao-pending-';

export function placeholder(value: SqlShape<string>): Placeholder {
  return { token: `${TOKEN_PREFIX}${randomUUID()}`, value };
}

/**
 * The text serializing `settled` would give, made from `text`, which serialized `withTokens`: the same record
 * while its placeholders held their tokens. Each token is replaced by its field's settled value, as SQL does for
 * stored copies (`settledText`). Undefined when the two records differ otherwise, or a value would need escaping
 * in JSON: the caller then serializes `settled` itself.
 */
export function settledSerialization(
  text: string,
  withTokens: Readonly<Record<string, unknown>>,
  settled: Readonly<Record<string, unknown>>,
): string | undefined {
  let out = text;
  for (const field of Object.keys(settled)) {
    const token = withTokens[field];
    const value = settled[field];
    if (token === value) continue;
    if (typeof token !== 'string' || !token.startsWith(TOKEN_PREFIX) || typeof value !== 'string') return undefined;
    if (JSON.stringify(value).length !== value.length + 2) return undefined;
    const at = out.indexOf(`"${token}"`);
    if (at < 0) return undefined;
    out = `${out.slice(0, at + 1)}${value}${out.slice(at + 1 + token.length)}`;
  }
  return Object.keys(withTokens).length === Object.keys(settled).length ? out : undefined;
}

/** `text` (a serialized record) with each placeholder's token replaced by its value, as SQL text. */
export function settledText(text: string, placeholders: readonly Placeholder[] = []): RawBuilder<string> {
  return builtShape(settledTextShape(text, placeholders));
}

/** `settledText` as a shape, for a statement built once per shape (sql-shape.ts). */
export function settledTextShape(text: string, placeholders: readonly Placeholder[] = []): SqlShape<string> {
  const parts: SqlShape[] = [boundValue(text)];
  for (const p of placeholders) parts.push(boundValue(p.token), p.value);
  return composedShape('settled', parts, ([textSql, ...replacements]) => {
    let settled = sql<string>`cast(${textSql} as text)`;
    for (let i = 0; i < replacements.length; i += 2) settled = sql<string>`replace(${settled}, ${replacements[i]}, ${replacements[i + 1]})`;
    return settled;
  });
}
