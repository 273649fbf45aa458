// A statement, or a part of one, as its shape and its values. A write's later statements (its event, with its
// entry in the write log and its Idempotency-Key's record) are made of parts several modules own; built with
// Kysely's `sql` for every write, they cost Node about 28 µs per sale (docs/performance.md). As shapes, the
// whole statement is built and compiled once per key (statement-cache.ts), and a write only gathers its values.
import type { CompiledQuery, Kysely, RawBuilder } from 'kysely';
import { sql } from 'kysely';
import { sharedStatementCache } from './statement-cache.ts';

export interface Shaped<R> {
  /** Names all the SQL text depends on besides the values: one key, one text, always as many values. */
  key: string;
  values: readonly unknown[];
  /** The SQL, every value bound as a parameter: never inlined, never read to decide the text. */
  build(values: readonly unknown[]): R;
}

export type SqlShape<T = unknown> = Shaped<RawBuilder<T>>;

/** The SQL of `shape`, with its own values. */
export const builtShape = <R>(shape: Shaped<R>): R => shape.build(shape.values);

/** One value as a part: its parameter. */
export const boundValue = (value: unknown): SqlShape => ({ key: '$', values: [value], build: bindFirst });

const bindFirst = (values: readonly unknown[]): RawBuilder<unknown> => sql`${values[0]}`;

/** Values read by the part that composes them (`composedShape`'s `join`), not SQL of their own. */
export const plainValues = (...values: unknown[]): SqlShape => ({ key: `values:${values.length}`, values, build: nothing });

const nothing = (): RawBuilder<unknown> => sql``;

/** One shape made of `parts`: `join` puts their SQL together, and may read the values of each part. */
export function composedShape<R, P = RawBuilder<unknown>>(
  key: string,
  parts: readonly Shaped<P>[],
  join: (built: P[], values: (readonly unknown[])[]) => R,
): Shaped<R> {
  const values: unknown[] = [];
  const lengths: number[] = [];
  for (const part of parts) {
    for (const value of part.values) values.push(value);
    lengths.push(part.values.length);
  }
  return {
    key: `${key}(${parts.map((part) => part.key).join(';')})`,
    values,
    build(all) {
      const slices: (readonly unknown[])[] = [];
      let at = 0;
      for (const length of lengths) {
        slices.push(all.slice(at, at + length));
        at += length;
      }
      return join(
        parts.map((part, i) => part.build(slices[i] as readonly unknown[])),
        slices,
      );
    },
  };
}

/** `shape` compiled through the shared statement cache: built and compiled once per key of `owner`, then only bound. */
export function compiledShape(db: Kysely<any>, owner: object, shape: SqlShape): CompiledQuery {
  return sharedStatementCache(db).statement(owner, shape.key, 0, shape.values, (values) => [
    { compile: () => shape.build(values).compile(db) },
  ])!;
}
