// The inserts of the write engine, compiled once per shape like reads (src/infra/db/statement-cache.ts):
// a shape is the table, the columns of each row and the SQL fragments among the values. Building a sale's
// inserts with Kysely on every request (ten item rows of fourteen values) was the largest share of
// Kysely in the profile of `POST /v1/sales` (docs/performance.md).
import type { KeyMode } from '../domain/api-keys.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { CompiledQuery, RawBuilder } from 'kysely';
import type { Db } from '../infra/db/database.ts';
import { insertScoped } from '../infra/db/tenancy.ts';
import { sharedStatementCache } from '../infra/db/statement-cache.ts';
import type { Row } from '../infra/db/row.ts';

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

/** The INSERT of `rows` into the tenant's `table` (with `RETURNING *` when asked), bound from a cached text when it can. */
export function insertStatement(trx: Db, table: string, tenant: Tenant, rows: readonly Row[], returning: boolean): CompiledQuery {
  const values: unknown[] = [tenant.accountId, tenant.mode];
  let key: string | null = returning ? 'returning' : '';
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
  if (key === null) return buildInsert(trx, table, tenant, rows, returning).compile();
  return sharedStatementCache(trx).statement(ownerOf(table), key, 0, values, (bound) => {
    let next = 2;
    const rebuilt = rows.map((row) => {
      const out: Row = {};
      for (const column in row) {
        const value = row[column];
        if (value === undefined) continue;
        out[column] = isSqlFragment(value) ? value : bound[next++];
      }
      return out;
    });
    return [buildInsert(trx, table, { accountId: bound[0] as string, mode: bound[1] as KeyMode }, rebuilt, returning)];
  })!;
}

function buildInsert(trx: Db, table: string, tenant: Tenant, rows: readonly Row[], returning: boolean) {
  const insert = insertScoped(trx, table, tenant, rows);
  return returning ? insert.returningAll() : insert;
}
