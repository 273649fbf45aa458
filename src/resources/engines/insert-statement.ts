// The inserts of the write engine, compiled once per shape like reads (src/infra/db/statements/statement-cache.ts):
// a shape is the table, the columns of each row and the SQL fragments among the values. Building a sale's
// inserts with Kysely on every request (ten item rows of fourteen values) was the largest share of
// Kysely in the profile of `POST /v1/sales` (docs/performance.md).
import type { KeyMode } from '../../domain/api-keys.ts';
import type { Tenant } from '../../domain/tenant.ts';
import { type Compilable, type CompiledQuery, type QueryCreator, type RawBuilder, sql } from 'kysely';
import { builtShape, type Shaped } from '../../infra/db/statements/sql-shape.ts';
import type { StatementTail } from '../descriptor.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { insertScoped } from '../../infra/db/tenancy/tenancy.ts';
import { sharedStatementCache } from '../../infra/db/statements/statement-cache.ts';
import type { Row } from '../../infra/db/engine/row.ts';

/** A SQL fragment (sql`now()`) given as a column value: written as SQL, never as JSON. */
export const isSqlFragment = (value: unknown): value is RawBuilder<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { toOperationNode?: unknown }).toOperationNode === 'function';

/** Fragments that are the same SQL and values in every call, by identity: a row holding any other
 *  fragment (one that carries a request's value, such as a JSON column's cast) is built anew. */
const constantFragments = new WeakMap<object, number>();
let nextFragmentId = 0;

/** Marks a fragment made once (a module constant) as part of an insert's shape. */
export function constantSql<T>(fragment: RawBuilder<T>): RawBuilder<T> {
  constantFragments.set(fragment, nextFragmentId++);
  return fragment;
}

/** One owner per table for the cache (a string cannot key its WeakMap). */
const owners = new Map<string, object>();
const ownerOf = (table: string): object => {
  let owner = owners.get(table);
  if (!owner) {
    owner = { table };
    owners.set(table, owner);
  }
  return owner;
};

/** Rows of one table, for an insert. */
export interface TableRows {
  table: string;
  rows: readonly Row[];
}

/** The INSERT of `rows` into the tenant's `table` (with `RETURNING *` when asked), bound from a cached text when it can. */
export function insertStatement(trx: Db, table: string, tenant: Tenant, rows: readonly Row[], returning: boolean): CompiledQuery {
  return insertsStatement(trx, tenant, [{ table, rows }], returning);
}

/**
 * The INSERT of one row with the write's tail (origin mark, write-log entry, key record) as CTEs of the same
 * statement, answering the tail's columns: one statement where the INSERT and the tail took two, and nothing to await
 * between them.
 */
export function insertCarryingTail(trx: Db, table: string, tenant: Tenant, row: Row, tail: Shaped<StatementTail>): CompiledQuery {
  return insertsStatement(trx, tenant, [{ table, rows: [row] }], false, tail);
}

/**
 * One statement that inserts into several tables of the tenant:
 * each but the last as a CTE. One statement fewer than one per table: each costs its set-up and its messages
 * on both sides (docs/performance.md). The rows may not depend on one another (Citus runs such CTEs apart).
 * With a write's `tail`, every insert is a CTE, the tail's CTEs follow, and the statement answers the tail's columns.
 */
export function insertsStatement(
  trx: Db,
  tenant: Tenant,
  inserts: readonly TableRows[],
  returning: boolean,
  tail?: Shaped<StatementTail>,
): CompiledQuery {
  const values: unknown[] = [tenant.accountId, tenant.mode];
  let key: string | null = returning ? 'returning' : '';
  for (const { table, rows } of inserts) {
    key += `|${table}`;
    for (const row of rows) {
      key += ';';
      for (const column in row) {
        const value = row[column];
        if (value === undefined) continue;
        if (isSqlFragment(value)) {
          const id = constantFragments.get(value);
          if (id === undefined) {
            key = null;
            break;
          }
          key += `${column}=#${id},`;
        } else {
          key += `${column},`;
          values.push(value);
        }
      }
      if (key === null) break;
    }
    if (key === null) break;
  }
  if (key === null) return buildInserts(trx, tenant, inserts, returning, tail && builtShape(tail)).compile();
  const tailAt = values.length;
  if (tail) {
    key += `|${tail.key}`;
    for (const value of tail.values) values.push(value);
  }
  return sharedStatementCache(trx).statement(ownerOf(inserts.map((i) => i.table).join('+')), key, 0, values, (bound) => {
    let next = 2;
    const rebuilt = inserts.map(({ table, rows }) => ({
      table,
      rows: rows.map((row) => {
        const out: Row = {};
        for (const column in row) {
          const value = row[column];
          if (value === undefined) continue;
          out[column] = isSqlFragment(value) ? value : bound[next++];
        }
        return out;
      }),
    }));
    const scope = { accountId: bound[0] as string, mode: bound[1] as KeyMode };
    return [buildInserts(trx, scope, rebuilt, returning, tail?.build(bound.slice(tailAt)))];
  })!;
}

interface CteChain {
  with(name: string, cte: () => RawBuilder<unknown>): CteChain;
  selectNoFrom(selections: readonly unknown[]): Compilable;
}

function buildInserts(trx: Db, tenant: Tenant, inserts: readonly TableRows[], returning: boolean, tail?: StatementTail): Compilable {
  let db = trx as unknown as QueryCreator<any>;
  for (const [i, { table, rows }] of (tail ? inserts : inserts.slice(0, -1)).entries()) {
    db = db.with(`inserted_${i}`, (cte) => insertScoped(cte, table, tenant, rows));
  }
  if (tail) {
    // The inserts run as CTEs nothing reads: PostgreSQL runs every data-modifying CTE once, read or not. The tail's
    // CTEs are raw SQL, which Kysely does not parenthesize: the chain is untyped from here.
    let chain = db as unknown as CteChain;
    for (const [name, cte] of tail.ctes) chain = chain.with(name, () => sql`(${cte})`);
    return chain.selectNoFrom(tail.columns);
  }
  const last = inserts[inserts.length - 1] as TableRows;
  const insert = insertScoped(db, last.table, tenant, last.rows);
  return returning ? insert.returningAll() : insert;
}
