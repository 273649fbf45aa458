// The one place statements are scoped to a tenant: every read, insert, update and row lock of an
// account-owned table is built here and carries (team_id, mode): query-builder statements, the
// raw SQL and COPY columns of the bulk import, and the `sql`-tagged statements of events and the
// webhook delivery worker. test/tenancy-sql.test.ts checks the statements of the served routes and
// of the CLI's import, export and `webhooks list`.
import {
  type DeleteQueryBuilder,
  type InsertQueryBuilder,
  type QueryCreator,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
  type UpdateQueryBuilder,
} from 'kysely';
import { errors } from '../../errors/app-error.ts';
import type { Db } from './database.ts';

/** The two tenant columns (a Tenant with any mode string: tests compile with plain literals). */
export interface TenantScope {
  accountId: string;
  mode: string;
}

/** The tenant's columns on every account-owned table. */
export const TENANT_COLUMNS = ['team_id', 'mode'] as const;

/** A COPY into an account-owned table: the tenant's columns first, then `columns`; each line starts with `linePrefix`. */
export function copyScoped(scope: TenantScope, columns: readonly string[]): { columns: string[]; linePrefix: string } {
  // A UUID and a mode word need no escaping in COPY's text format.
  return { columns: [...TENANT_COLUMNS, ...columns], linePrefix: `${scope.accountId}\t${scope.mode}` };
}

/** Raw SQL (the bulk import's session): the tenant condition on `alias`, its values bound from `$first`. */
export function conditionScoped(scope: TenantScope, alias: string, first: number): { text: string; params: [string, string] } {
  return { text: `${alias}.team_id = $${first}::uuid AND ${alias}.mode = $${first + 1}`, params: [scope.accountId, scope.mode] };
}

/** Raw SQL: an INSERT of one row of the tenant, `values` bound after the tenant's, and its ON CONFLICT clause. */
export function insertScopedText(
  table: string,
  scope: TenantScope,
  values: Readonly<Record<string, { value: unknown; cast?: string }>>,
  onConflict = '',
): { text: string; params: unknown[] } {
  const names = Object.keys(values);
  const placeholders = names.map((name, i) => `$${i + 3}${values[name]?.cast ? `::${values[name]?.cast}` : ''}`);
  return {
    text: `INSERT INTO ${table} (${[...TENANT_COLUMNS, ...names].join(', ')}) VALUES ($1::uuid, $2, ${placeholders.join(', ')}) ${onConflict}`.trim(),
    params: [scope.accountId, scope.mode, ...names.map((name) => values[name]?.value)],
  };
}

/** A `sql`-tagged statement: the tenant's columns then `columns`, for an INSERT's column list or ON CONFLICT target. */
export const columnsScopedSql = (columns: readonly string[] = []): RawBuilder<unknown> =>
  sql.raw([...TENANT_COLUMNS, ...columns].join(', '));

/** A `sql`-tagged statement: the tenant's values, bound in the order of `columnsScopedSql`. */
export const valuesScopedSql = (scope: TenantScope): RawBuilder<unknown> => sql`${scope.accountId}, ${scope.mode}`;

/** A `sql`-tagged statement: the tenant condition on `alias`, its values bound. */
export const conditionScopedSql = (scope: TenantScope, alias: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`${sql.raw(`${alias}.team_id`)} = ${scope.accountId} AND ${sql.raw(`${alias}.mode`)} = ${scope.mode}`;

/** A `sql`-tagged condition: rows of `left` and `right` belong to the same account (a join or a correlation,
 *  on the distribution column, so the two rows sit on one Citus node). */
export const sameAccountSql = (left: string, right: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`${sql.raw(`${left}.team_id`)} = ${sql.raw(`${right}.team_id`)}`;

/** The tenant's values as selected columns named after `TENANT_COLUMNS`, for an INSERT … SELECT. */
export const tenantValuesAs = (scope: TenantScope) =>
  [sql`cast(${scope.accountId} as uuid)`.as('team_id'), sql`cast(${scope.mode} as text)`.as('mode')] as const;

/** A row of a queue that serves every tenant (webhook deliveries), by its key (team_id, id). */
export const keyScopedSql = (accountId: string, id: string): RawBuilder<SqlBool> => sql<SqlBool>`team_id = ${accountId} AND id = ${id}`;

/** Rows of such a queue by their keys: `(team_id, id) IN (…)`, one shard-routable pair each (docs/scale-out.md). */
export const keysScopedSql = (keys: readonly { team_id: string; id: string }[], alias?: string): RawBuilder<SqlBool> => {
  const key = alias ? `(${alias}.team_id, ${alias}.id)` : '(team_id, id)';
  return sql<SqlBool>`${sql.raw(key)} IN (${sql.join(keys.map((k) => sql`(${k.team_id}::uuid, ${k.id}::uuid)`))})`;
};

/** Conditions besides the tenant that bound what a resource may see (column → allowed values, or null for IS NULL). */
export type FixedConditions = Readonly<Record<string, readonly string[] | null>>;

export type ScopedSelect = SelectQueryBuilder<any, any, any>;
type Values = Record<string, unknown>;

/** The tenant a route acts for; a route without one reached an engine through a missing guard config. */
export function requireTenant<T extends TenantScope>(tenant: T | null, action: 'read' | 'write'): T {
  if (!tenant) throw errors.internal(new Error(`${action} without a tenant: route is missing its guard config`));
  return tenant;
}

/** Tenant first, then the fixed conditions as literals: a partial index predicate
 *  (`transaction_type IN ('sale', 'order')`, `deleted_at IS NULL`) is only usable when the
 *  planner sees constants, even under a generic prepared plan. */
export function selectScoped(db: Db | QueryCreator<any>, table: string, scope: TenantScope, where?: FixedConditions): ScopedSelect {
  let q: ScopedSelect = db.selectFrom(table).where('team_id', '=', scope.accountId).where('mode', '=', scope.mode);
  for (const [column, allowed] of Object.entries(where ?? {})) {
    q =
      allowed === null
        ? q.where(column, 'is', null)
        : q.where(sql<SqlBool>`${sql.ref(column)} in (${sql.join(allowed.map((v) => sql.lit(v)))})`);
  }
  return q;
}

/** One row by id, locked until the transaction ends. */
export function lockScoped(trx: Db, table: string, scope: TenantScope, id: string, where?: FixedConditions): ScopedSelect {
  return selectScoped(trx, table, scope, where).selectAll().where('id', '=', id).forUpdate();
}

/** New rows of the tenant: the tenant columns are set here, whatever the values carry. */
export function insertScoped(
  db: Db,
  table: string,
  scope: TenantScope,
  rows: Values | readonly Values[],
): InsertQueryBuilder<any, any, any> {
  const owned = (row: Values) => ({ ...row, team_id: scope.accountId, mode: scope.mode });
  return db.insertInto(table).values(Array.isArray(rows) ? rows.map(owned) : owned(rows as Values));
}

/** An UPDATE that can only reach rows of the tenant; the caller adds `set` and its own conditions.
 *  `db` may carry common table expressions (`db.with(…)`), each scoped the same way. */
export function updateScoped(db: Db | QueryCreator<any>, table: string, scope: TenantScope): UpdateQueryBuilder<any, any, any, any> {
  return db.updateTable(table).where('team_id', '=', scope.accountId).where('mode', '=', scope.mode);
}

/** A DELETE that can only reach rows of the tenant (resources soft-delete; this is for records
 *  that are really removed, such as webhook endpoints). */
export function deleteScoped(db: Db, table: string, scope: TenantScope): DeleteQueryBuilder<any, any, any> {
  return db.deleteFrom(table).where('team_id', '=', scope.accountId).where('mode', '=', scope.mode);
}
