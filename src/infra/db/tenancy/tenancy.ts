// The one place statements are scoped to a tenant: every read, insert, update and row lock of an
// account-owned table is built here and carries (team_id, mode): query-builder statements, the
// raw SQL and COPY columns of the bulk import, and the `sql`-tagged statements of events and the
// webhook delivery worker. test/tenancy-sql.test.ts checks the statements of the served routes and
// of the CLI's import, export and `webhooks list`.
import {
  type DeleteQueryBuilder,
  type InsertQueryBuilder,
  type Kysely,
  type QueryCreator,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
  type UpdateQueryBuilder,
} from 'kysely';
import { errors } from '../../../errors/app-error.ts';
import { type Tenant, tenantOfRow } from '../../../domain/tenant.ts';
import type { Db } from '../engine/database.ts';

/** The account's column on every account-owned table (Citus' distribution column). */
export const ACCOUNT_COLUMN = 'team_id';

/** The tenant's columns on every account-owned table. */
export const TENANT_COLUMNS = [ACCOUNT_COLUMN, 'mode'] as const;

/**
 * Whom a statement's rows belong to: a tenant, or an account whatever its mode (ids are unique within an account,
 * and a queue that serves every tenant, webhook deliveries, has no mode of its own). The condition helpers take
 * either; the statements that write or list a tenant's rows take a `Tenant`.
 */
export type Scope = Tenant | { accountId: string; mode?: undefined };

/** Raw SQL: the tenant's columns then `columns`, for a column list or an ON CONFLICT target. */
const columnsScopedText = (columns: readonly string[] = []): string => [...TENANT_COLUMNS, ...columns].join(', ');

/** A COPY into an account-owned table: the tenant's columns first, then `columns`; each line starts with `linePrefix`. */
export function copyScoped(scope: Tenant, columns: readonly string[]): { columns: string[]; linePrefix: string } {
  // A UUID and a mode word need no escaping in COPY's text format.
  return { columns: [...TENANT_COLUMNS, ...columns], linePrefix: `${scope.accountId}\t${scope.mode}` };
}

/** Raw SQL (the bulk import's session): the scope's condition on `alias`, its values bound from `$first`. */
export function conditionScoped(scope: Scope, alias: string, first: number): { text: string; params: string[] } {
  const account = `${alias}.${ACCOUNT_COLUMN} = $${first}::uuid`;
  if (scope.mode === undefined) return { text: account, params: [scope.accountId] };
  return { text: `${account} AND ${alias}.mode = $${first + 1}`, params: [scope.accountId, scope.mode] };
}

/** Raw SQL: an INSERT of one row of the tenant, `values` bound after the tenant's; on a conflict on the tenant's
 *  columns and `onConflict.columns`, its `action` (`DO UPDATE SET …`). */
export function insertScopedText(
  table: string,
  scope: Tenant,
  values: Readonly<Record<string, { value: unknown; cast?: string }>>,
  onConflict?: { columns: readonly string[]; action: string },
): { text: string; params: unknown[] } {
  const names = Object.keys(values);
  const placeholders = names.map((name, i) => `$${i + 3}${values[name]?.cast ? `::${values[name]?.cast}` : ''}`);
  const conflict = onConflict ? ` ON CONFLICT (${columnsScopedText(onConflict.columns)}) ${onConflict.action}` : '';
  return {
    text: `INSERT INTO ${table} (${columnsScopedText(names)}) VALUES ($1::uuid, $2, ${placeholders.join(', ')})${conflict}`,
    params: [scope.accountId, scope.mode, ...names.map((name) => values[name]?.value)],
  };
}

/** A `sql`-tagged statement: the tenant's columns then `columns`, for an INSERT's column list or ON CONFLICT target. */
export const columnsScopedSql = (columns: readonly string[] = []): RawBuilder<unknown> => sql.raw(columnsScopedText(columns));

/** A `sql`-tagged statement: the account's column (of `alias`), for a table that has no mode of its own (deliveries). */
export const accountColumnSql = (alias?: string): RawBuilder<unknown> => sql.raw(alias ? `${alias}.${ACCOUNT_COLUMN}` : ACCOUNT_COLUMN);

/** A `sql`-tagged statement: the tenant's values, bound in the order of `columnsScopedSql`. */
export const valuesScopedSql = (scope: Tenant): RawBuilder<unknown> => sql`${scope.accountId}, ${scope.mode}`;

/** A `sql`-tagged statement: the scope's condition on `alias` (or on unqualified columns), its values bound. */
export function conditionScopedSql(scope: Scope, alias?: string): RawBuilder<SqlBool> {
  const account = sql<SqlBool>`${accountColumnSql(alias)} = ${scope.accountId}`;
  if (scope.mode === undefined) return account;
  return sql<SqlBool>`${account} AND ${sql.raw(alias ? `${alias}.mode` : 'mode')} = ${scope.mode}`;
}

/** A `sql`-tagged condition: rows of `left` and `right` belong to the same account, or the same tenant (account and
 *  mode). A join or a correlation on the distribution column, so the two rows sit on one Citus node. */
export function sameScopeSql(left: string, right: string, scope: 'account' | 'tenant'): RawBuilder<SqlBool> {
  const account = sql<SqlBool>`${accountColumnSql(left)} = ${accountColumnSql(right)}`;
  return scope === 'account' ? account : sql<SqlBool>`${account} AND ${sql.raw(`${left}.mode = ${right}.mode`)}`;
}

/** A `sql`-tagged condition: rows of `alias` belong to the tenant of the API key `keyAlias` (an `api_keys` row,
 *  whose account column is `account_id`). */
export const keyTenantSql = (alias: string, keyAlias: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`${accountColumnSql(alias)} = ${sql.raw(`${keyAlias}.account_id AND ${alias}.mode = ${keyAlias}.mode`)}`;

/** The tenant's values as selected columns named after `TENANT_COLUMNS`, for an INSERT … SELECT. */
export const tenantValuesAs = (scope: Tenant) =>
  [sql`cast(${scope.accountId} as uuid)`.as(ACCOUNT_COLUMN), sql`cast(${scope.mode} as text)`.as('mode')] as const;

/** The tenant of a row image (a change capture's): null when it has no valid tenant columns. */
export const tenantOfImage = (row: Readonly<Record<string, unknown>>): Tenant | null => tenantOfRow(row[ACCOUNT_COLUMN], row.mode);

/** A row of several tenants' (one JSON recordset of a capture batch): the tenant's columns, then `values`. */
export const tenantFields = <T extends object>(scope: Tenant, values: T) => ({
  [ACCOUNT_COLUMN]: scope.accountId,
  mode: scope.mode,
  ...values,
});

/** A `sql`-tagged FROM item: the rows `tenantFields` made, sent as one JSON text, read back as `alias` with the
 *  tenant's columns and `columns` (`name type, …`). The text is cast to json in SQL (postgres.js would encode a
 *  json-typed parameter as JSON once more). */
export const tenantsRecordsetSql = (json: string, alias: string, columns: string): RawBuilder<unknown> =>
  sql`json_to_recordset(cast(cast(${json} as text) as json)) AS ${sql.raw(`${alias}(${ACCOUNT_COLUMN} uuid, mode text, ${columns})`)}`;

/** A `sql`-tagged select list: the tenant's columns of `alias`, in the order of `columnsScopedSql`. */
export const tenantColumnsOf = (alias: string): RawBuilder<unknown> => sql.raw(TENANT_COLUMNS.map((c) => `${alias}.${c}`).join(', '));

/** The key of a row of a queue that serves every tenant (webhook deliveries): its account and its id. */
export interface AccountKey {
  account_id: string;
  id: string;
}

/** Rows of such a queue by their keys: `(team_id, id) IN (…)`, one shard-routable pair each (docs/scale-out.md). */
export const keysScopedSql = (keys: readonly AccountKey[], alias?: string): RawBuilder<SqlBool> => {
  const key = alias ? `(${alias}.${ACCOUNT_COLUMN}, ${alias}.id)` : `(${ACCOUNT_COLUMN}, id)`;
  return sql<SqlBool>`${sql.raw(key)} IN (${sql.join(keys.map((k) => sql`(${k.account_id}::uuid, ${k.id}::uuid)`))})`;
};

/** Conditions besides the tenant that bound what a resource may see (column → allowed values, or null for IS NULL). */
type FixedConditions = Readonly<Record<string, readonly string[] | null>>;

type ScopedSelect = SelectQueryBuilder<any, any, any>;
type Values = Record<string, unknown>;

/** The descriptor engine names its tables at run time (`descriptor.table`), which the typed tables cannot
 *  check: its statements are built on this untyped view of the connection, here and nowhere else. */
type Untyped = Kysely<any> | QueryCreator<any>;
const untyped = (db: Db | QueryCreator<any>): Untyped => db as unknown as Untyped;

/** The tenant a route acts for; a route without one reached an engine through a missing guard config. */
export function requireTenant<T extends Tenant>(tenant: T | null, action: 'read' | 'write'): T {
  if (!tenant) throw errors.internal(new Error(`${action} without a tenant: route is missing its guard config`));
  return tenant;
}

/** Tenant first, then the fixed conditions as literals: a partial index predicate
 *  (`transaction_type IN ('sale', 'order')`, `deleted_at IS NULL`) is only usable when the
 *  planner sees constants, even under a generic prepared plan. */
export function selectScoped(db: Db | QueryCreator<any>, table: string, scope: Tenant, where?: FixedConditions): ScopedSelect {
  return withFixed(untyped(db).selectFrom(table).where(ACCOUNT_COLUMN, '=', scope.accountId).where('mode', '=', scope.mode), where);
}

/** A resource's fixed conditions (`ResourceDescriptor.where`) added to a query. */
function withFixed<Q extends { where(...args: any[]): Q }>(query: Q, where: FixedConditions | undefined): Q {
  let q = query;
  for (const [column, allowed] of Object.entries(where ?? {})) {
    q =
      allowed === null
        ? q.where(column, 'is', null)
        : q.where(sql<SqlBool>`${sql.ref(column)} in (${sql.join(allowed.map((v) => sql.lit(v)))})`);
  }
  return q;
}

/** One row by id, locked until the transaction ends. */
export function lockScoped(trx: Db, table: string, scope: Tenant, id: string, where?: FixedConditions): ScopedSelect {
  return selectScoped(trx, table, scope, where).selectAll().where('id', '=', id).forUpdate();
}

/** New rows of the tenant: the tenant columns are set here, whatever the values carry. */
export function insertScoped(
  db: Db | QueryCreator<any>,
  table: string,
  scope: Tenant,
  rows: Values | readonly Values[],
): InsertQueryBuilder<any, any, any> {
  const owned = (row: Values) => ({ ...row, [ACCOUNT_COLUMN]: scope.accountId, mode: scope.mode });
  return untyped(db)
    .insertInto(table)
    .values(Array.isArray(rows) ? rows.map(owned) : owned(rows as Values));
}

/**
 * New rows of the tenant sent as one JSON text (an array of objects keyed by `columns`), read back by
 * `json_populate_recordset` with the table's own row type: each value goes through its column's input
 * function, as a bound parameter would. The tenant columns come from their own parameters, never from the
 * JSON. The text is cast to json in SQL: postgres.js would encode a json-typed parameter as JSON once more.
 */
export function insertScopedFromJson(
  db: Db | QueryCreator<any>,
  table: string,
  scope: Tenant,
  columns: readonly string[],
  json: unknown,
): InsertQueryBuilder<any, any, any> {
  const rows = sql`json_populate_recordset(cast(NULL as ${sql.table(table)}), cast(cast(${json} as text) as json))`.as('r');
  return untyped(db)
    .insertInto(table)
    .columns([...TENANT_COLUMNS, ...columns])
    .expression(
      untyped(db)
        .selectFrom(rows)
        .select([...tenantValuesAs(scope), ...columns.map((column) => sql.ref(`r.${column}`).as(column))]),
    );
}

/**
 * New rows of the tenant, one per row of `from` (a CTE of the same statement) that meets `where`: each column of
 * `columns` from its expression over that row. The tenant columns come from the scope, never from `from`.
 */
export function insertScopedFromRows(
  db: Db | QueryCreator<any>,
  table: string,
  scope: Tenant,
  columns: Readonly<Record<string, RawBuilder<unknown>>>,
  from: string,
  where: RawBuilder<SqlBool>,
): InsertQueryBuilder<any, any, any> {
  return untyped(db)
    .insertInto(table)
    .columns([...TENANT_COLUMNS, ...Object.keys(columns)])
    .expression(
      untyped(db)
        .selectFrom(from)
        .select([...tenantValuesAs(scope), ...Object.entries(columns).map(([column, value]) => value.as(column))])
        .where(where),
    );
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Rows as the JSON text `insertScopedFromJson` reads back from one parameter: ten items of a sale are then one
 * parameter, not a hundred and forty (binding each one was the driver's largest cost per sale,
 * docs/performance.md). JSON.stringify writes a lone surrogate (a body may hold one: `"\ud800"`) as an escape,
 * which PostgreSQL's json refuses; as a parameter of its own the driver sent it as U+FFFD, and so does this.
 */
export function rowsAsJson(rows: readonly Values[]): string {
  const json = JSON.stringify(rows);
  if (!json.includes('\\ud')) return json;
  return JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value));
}

/** An UPDATE that can only reach rows of the tenant; the caller adds `set` and its own conditions.
 *  `db` may carry common table expressions (`db.with(…)`), each scoped the same way. */
export function updateScoped(
  db: Db | QueryCreator<any>,
  table: string,
  scope: Tenant,
  where?: FixedConditions,
): UpdateQueryBuilder<any, any, any, any> {
  return withFixed(untyped(db).updateTable(table).where(ACCOUNT_COLUMN, '=', scope.accountId).where('mode', '=', scope.mode), where);
}

/** A DELETE that can only reach rows of the tenant (resources soft-delete; this is for records
 *  that are really removed, such as webhook endpoints). */
export function deleteScoped(db: Db, table: string, scope: Tenant): DeleteQueryBuilder<any, any, any> {
  return untyped(db).deleteFrom(table).where(ACCOUNT_COLUMN, '=', scope.accountId).where('mode', '=', scope.mode);
}
