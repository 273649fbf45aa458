// Stage 3: a plan → Kysely queries, always inside the tenant (team_id, mode) and the descriptor's
// fixed conditions. Pagination is keyset only: each page is a range scan of the (team_id, mode,
// <sort>, id) index, so page 1 000 costs what page 1 costs.
//
// A nullable sort column is two index ranges in PostgreSQL's order (ASC: values then NULLs;
// DESC: NULLs then values). A row comparison never matches NULL, so a cursor continues with up to
// two *segments*, each one plain index range; the engine reads them in turn until the page is full.
import type { KeyMode } from '../domain/api-keys.ts';
import type { Tenant } from '../domain/tenant.ts';
import { CompiledQuery, type Expression, type RawBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../infra/db/engine/database.ts';
import { selectScoped } from '../infra/db/tenancy/tenancy.ts';
import type { IncludeDescriptor, QueryableResource } from './contract.ts';
import type { FieldKind } from '../schemas/common.ts';
import type { FilterPlan, ListPlan, Scalar } from './plan.ts';
import { rowMeta } from './row-meta.ts';
import { statementCache } from '../infra/db/statements/statement-cache.ts';
import { VERSION_KEY, versionSql } from './version.ts';
import { SQL_TYPE } from './values.ts';

export type Query = SelectQueryBuilder<any, any, any>;

/** Alias of the sort value as a cursor stores it (timestamps keep their microseconds). */
export const CURSOR_KEY = '__cursor_value';

/** Parameters always travel as text and are cast in SQL, so both drivers send them alike (PGlite
 *  would otherwise type `$1` from the cast and refuse a string for a boolean). */
const cast = (value: string, kind: FieldKind): RawBuilder<unknown> => sql`cast(${value}::text as ${sql.raw(SQL_TYPE[kind])})`;
const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * A cursor's value as the bound of a keyset range: sent as text (a timestamp keeps its
 * microseconds; postgres.js would round a typed one to milliseconds) and read through a scalar
 * subquery (an InitPlan), still the bound of one index range but out of the planner's sight, so a
 * prepared page statement settles on one generic plan instead of being planned at each call for
 * values that never change its shape (docs/performance.md, "Sixth round").
 */
export const cursorBound = (value: string, kind: FieldKind): RawBuilder<unknown> => sql`(select ${cast(value, kind)})`;

function comparison(col: RawBuilder<unknown>, op: string, value: Scalar, kind: FieldKind): RawBuilder<SqlBool> {
  if (kind !== 'timestamp') return sql<SqlBool>`${col} ${sql.raw(op)} ${cast(String(value), kind)}`;
  // Responses show milliseconds while PostgreSQL stores microseconds: a timestamp value means its
  // whole millisecond [v, v+1ms), so filters agree with what clients see and stay index-friendly.
  const ms = Number(value);
  const lo = cast(iso(ms), kind);
  const hi = cast(iso(ms + 1), kind);
  switch (op) {
    case '=':
      return sql<SqlBool>`(${col} >= ${lo} and ${col} < ${hi})`;
    case '>':
      return sql<SqlBool>`${col} >= ${hi}`;
    case '>=':
      return sql<SqlBool>`${col} >= ${lo}`;
    case '<':
      return sql<SqlBool>`${col} < ${lo}`;
    default:
      return sql<SqlBool>`${col} < ${hi}`;
  }
}

const OPS = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** `neq` and `nin` keep NULLs: a null is not equal to the value, as a client reading JSON expects. */
export function filterCondition(f: FilterPlan): Expression<SqlBool> {
  const col = sql.ref(f.field) as RawBuilder<unknown>;
  switch (f.op) {
    case 'is_null':
      return f.value ? sql<SqlBool>`${col} is null` : sql<SqlBool>`${col} is not null`;
    case 'ilike':
      return sql<SqlBool>`${col} ilike ${f.value}`;
    case 'neq':
      return sql<SqlBool>`(${col} is null or not ${comparison(col, '=', f.value, f.kind)})`;
    case 'in':
    case 'nin': {
      const any =
        f.kind === 'timestamp'
          ? sql<SqlBool>`(${sql.join(
              f.values.map((v) => comparison(col, '=', v, f.kind)),
              sql` or `,
            )})`
          : sql<SqlBool>`${col} in (${sql.join(f.values.map((v) => cast(String(v), f.kind)))})`;
      return f.op === 'in' ? any : sql<SqlBool>`(${col} is null or not ${any})`;
    }
    default:
      return comparison(col, OPS[f.op], f.value, f.kind);
  }
}

function selectColumns(q: Query, fields: readonly string[], extra: readonly string[] = []): Query {
  const columns = [...new Set([...fields, ...extra])];
  return q.select(columns);
}

/** The queries of one list page, in reading order; the engine adds the limit to each. */
export function compileList(db: Db, d: QueryableResource, plan: ListPlan, scope: Tenant): Query[] {
  const { sort, after } = plan;
  const dir = sort.desc ? 'desc' : 'asc';
  let q = selectColumns(selectScoped(db, d.table, scope, d.where), plan.fields, [sort.field, ...includeKeys(d, plan.includes)]);
  if (sort.kind === 'timestamp') {
    q = q.select(sql<string>`to_char(${sql.ref(sort.field)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(CURSOR_KEY));
  }
  for (const f of plan.filters) q = q.where(filterCondition(f));

  const col = sql.ref(sort.field);
  const values = (w: Query) => w.orderBy(sort.field, dir).orderBy('id', dir);
  // All NULL here, yet ordered by the sort column too: `IS NULL` does not tell the planner the
  // index is already in id order, and it would sort otherwise.
  const nulls = (w: Query) => values(w.where(sort.field, 'is', null));
  const notNull = (w: Query) => (sort.nullable ? w.where(sort.field, 'is not', null) : w);

  if (!after) return [values(q)];
  const op = sql.raw(sort.desc ? '<' : '>');
  const id = cursorBound(after.id, 'uuid');
  if (after.value === null) {
    const rest = nulls(q.where(sql<SqlBool>`${sql.ref('id')} ${op} ${id}`));
    return sort.desc ? [rest, values(notNull(q))] : [rest];
  }
  const rest = values(q.where(sql<SqlBool>`(${col}, ${sql.ref('id')}) ${op} (${cursorBound(after.value, sort.kind)}, ${id})`));
  return sort.nullable && !sort.desc ? [rest, nulls(q)] : [rest];
}

/** One record by id; `extra` columns are read for includes but not returned. The record's version
 *  (its ETag) comes with it, whatever `fields` asks for. */
export function compileGet(
  db: Db,
  d: QueryableResource,
  fields: readonly string[],
  id: string,
  scope: Tenant,
  extra: readonly string[],
): Query {
  return selectColumns(selectScoped(db, d.table, scope, d.where), fields, extra)
    .select(versionSql().as(VERSION_KEY))
    .where('id', '=', id);
}

/** The related rows of an include: children of the parent in order, or the one referenced row. */
export function compileInclude(db: Db, inc: IncludeDescriptor, parent: Record<string, unknown>, scope: Tenant): Query {
  const q = selectColumns(selectScoped(db, inc.table, scope), rowMeta(inc.item).fields);
  if (inc.cardinality === 'one') return q.where('id', '=', parent[inc.foreignKey]).limit(sql.lit(1));
  const ordered = inc.orderBy ? q.orderBy(inc.orderBy, 'asc') : q;
  return ordered.where(inc.foreignKey, '=', parent.id).orderBy('id', 'asc');
}

// The statements as the engines run them: through the statement cache, so a shape is built by the
// functions above once and its text reused (src/infra/db/statements/statement-cache.ts). Each takes the values that
// vary within a shape in one fixed order, and the same function puts them back into a plan.

/** The plan and scope with every value that varies within a shape passed through `next`, in order:
 *  the tenant, the filter values, the cursor's position. */
function mapListValues(plan: ListPlan, scope: Tenant, next: (value: unknown) => unknown): [ListPlan, Tenant] {
  const tenant = { accountId: next(scope.accountId) as string, mode: next(scope.mode) as KeyMode };
  const filters = plan.filters.map((f): FilterPlan => {
    switch (f.op) {
      case 'is_null':
        return f;
      case 'in':
      case 'nin':
        return { ...f, values: f.values.map((v) => next(v) as Scalar) };
      case 'ilike':
        return { ...f, value: next(f.value) as string };
      default:
        return { ...f, value: next(f.value) as Scalar };
    }
  });
  const after = plan.after && {
    value: plan.after.value === null ? null : (next(plan.after.value) as string),
    id: next(plan.after.id) as string,
  };
  return [{ ...plan, filters, after }, tenant];
}

/** What fixes a list's SQL text besides its resource; null for a shape not worth caching (timestamp
 *  filters derive two parameters from each value). */
function listShape(plan: ListPlan): string | null {
  if (plan.filters.some((f) => f.kind === 'timestamp')) return null;
  const filters = plan.filters.map(
    (f) => `${f.field} ${f.op} ${f.op === 'is_null' ? f.value : f.op === 'in' || f.op === 'nin' ? f.values.length : ''}`,
  );
  const after = plan.after ? (plan.after.value === null ? 'after null' : 'after') : 'first';
  return `${plan.fields.join(',')}|${plan.sort.token}|${filters.join('&')}|${after}|${plan.includes.join(',')}`;
}

/**
 * Segment `segment` of a list page (see compileList) limited to `limit` rows; undefined past the last.
 *
 * The row limit is written into the text (`limit 21`), not sent as a parameter. With `limit $n`,
 * PostgreSQL costs a prepared statement's generic plan as if it read 10% of the table, so it plans
 * every execution again (a custom plan); with the number in the text, it keeps one generic plan per
 * connection wherever that plan costs no more than the custom ones (docs/performance.md, "Fifth
 * round"). A limit is an integer of 1..101, so a shape has at most that many texts.
 *
 * `within` adds conditions written in the text, with no value of their own (the feed's retention): the same for
 * every call with this `d`, since the cached text is the owner's.
 */
export function listStatement(
  db: Db,
  d: QueryableResource,
  plan: ListPlan,
  scope: Tenant,
  segment: number,
  limit: number,
  within: (q: Query) => Query = (q) => q,
): CompiledQuery | undefined {
  const values: unknown[] = [];
  // As text, the way the builders above send every value.
  mapListValues(plan, scope, (v) => values.push(typeof v === 'number' ? String(v) : v));
  const shape = listShape(plan);
  const rows = Math.trunc(limit);
  return statementCache(db).statement(d, shape === null ? null : `${shape}|${rows}`, segment, values, (bound) => {
    let i = 0;
    const [p, s] = mapListValues(plan, scope, () => bound[i++]);
    return compileList(db, d, p, s).map((q) => within(q).limit(sql.lit(rows)));
  });
}

/** One record by id (see compileGet). */
export function getStatement(
  db: Db,
  d: QueryableResource,
  fields: readonly string[],
  id: string,
  scope: Tenant,
  extra: readonly string[],
): CompiledQuery {
  const shape = `${fields.join(',')}|${extra.join(',')}`;
  return statementCache(db).statement(d, shape, 0, [scope.accountId, scope.mode, id], ([accountId, mode, key]) => [
    compileGet(db, d, fields, key as string, { accountId: accountId as string, mode: mode as KeyMode }, extra),
  ])!;
}

/** The related rows of an include (see compileInclude). */
export function includeStatement(db: Db, inc: IncludeDescriptor, parent: Record<string, unknown>, scope: Tenant): CompiledQuery {
  const link = inc.cardinality === 'one' ? inc.foreignKey : 'id';
  return statementCache(db).statement(inc, '', 0, [scope.accountId, scope.mode, parent[link]], ([accountId, mode, key]) => [
    compileInclude(db, inc, { [link]: key }, { accountId: accountId as string, mode: mode as KeyMode }),
  ])!;
}

/** The parent columns a list page reads for its includes besides `fields`: a 'one' include's foreign key. */
export function includeKeys(d: QueryableResource, includes: readonly string[]): string[] {
  return includes.flatMap((name) => {
    const inc = d.includes?.[name];
    return inc?.cardinality === 'one' ? [inc.foreignKey] : [];
  });
}

/** Alias of a 'many' include's parent id in the rows of a page's include statement. */
export const PARENT_KEY = '__parent_id';

/**
 * The related rows of a whole list page in one statement: children of any of the parents (ordered by
 * parent, then as on GET by id), or the referenced rows. The keys travel as one `uuid[]` parameter
 * (its text form), so a page of 1 or 100 records is the same statement text.
 */
export function compileIncludePage(db: Db, inc: IncludeDescriptor, keys: string, scope: Tenant): Query {
  const q = selectColumns(selectScoped(db, inc.table, scope), rowMeta(inc.item).fields);
  const anyKey = sql`any(cast(${keys}::text as uuid[]))`;
  if (inc.cardinality === 'one') return q.where(sql<SqlBool>`id = ${anyKey}`);
  const ordered = q
    .select(sql.ref(inc.foreignKey).as(PARENT_KEY))
    .where(sql<SqlBool>`${sql.ref(inc.foreignKey)} = ${anyKey}`)
    .orderBy(inc.foreignKey, 'asc');
  return (inc.orderBy ? ordered.orderBy(inc.orderBy, 'asc') : ordered).orderBy('id', 'asc');
}

/** The include rows of a page (see compileIncludePage); `keys` are the parents' ids or the foreign keys. */
export function includePageStatement(db: Db, inc: IncludeDescriptor, keys: readonly string[], scope: Tenant): CompiledQuery {
  const array = `{${keys.join(',')}}`;
  return statementCache(db).statement(inc, 'page', 0, [scope.accountId, scope.mode, array], ([accountId, mode, key]) => [
    compileIncludePage(db, inc, key as string, { accountId: accountId as string, mode: mode as KeyMode }),
  ])!;
}

/** The records of a resource matching `filters`, whatever the page: what counts and digests read. */
function matching(db: Db, d: QueryableResource, filters: readonly FilterPlan[], scope: Tenant): Query {
  let q = selectScoped(db, d.table, scope, d.where);
  for (const f of filters) q = q.where(filterCondition(f));
  return q;
}

/** How many records match the filters; with `cap`, counting stops there (a bounded index scan). */
export function countStatement(db: Db, d: QueryableResource, filters: readonly FilterPlan[], scope: Tenant, cap?: number): CompiledQuery {
  const rows = matching(db, d, filters, scope);
  if (cap === undefined) return rows.select(sql<string>`count(*)`.as('total')).compile();
  const capped = rows.select(sql.lit(1).as('one')).limit(sql.lit(Math.trunc(cap)));
  return (db as unknown as { selectFrom(from: unknown): Query })
    .selectFrom(capped.as('capped'))
    .select(sql<string>`count(*)`.as('total'))
    .compile();
}

/** The planner's estimate of the matching records: EXPLAIN (no execution) of the same selection, in JSON. */
export function estimateStatement(db: Db, d: QueryableResource, filters: readonly FilterPlan[], scope: Tenant): CompiledQuery {
  const compiled = matching(db, d, filters, scope).select('id').compile();
  return CompiledQuery.raw(`explain (format json) ${compiled.sql}`, [...compiled.parameters]);
}

/** `updated_at` as the API prints it (infra/db/engine/timestamp-text.ts: UTC, milliseconds cut, not rounded), or ''. */
const servedUpdatedAt = sql`coalesce(to_char(${sql.ref('updated_at')} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '')`;

/** The lowest and highest UUID whose text starts with `prefix` (0..7 hex digits: all in the first group). */
function prefixBounds(prefix: string): [string, string] {
  const bound = (fill: string) => {
    const hex = prefix.padEnd(32, fill);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  return [bound('0'), bound('f')];
}

/** The hex digits a digest level splits by, in order. */
export const HEX_DIGITS = '0123456789abcdef';

/**
 * A digest level: per child prefix of `prefix` (one more hex digit of the id), how many matching records it
 * holds and the SHA-256 of their lines `<id>:<updated_at as served>\n` in ascending id order, all in SQL, as
 * columns `count_<digit>` and `sha256_<digit>` of one row.
 *
 * The lines come from a subquery ordered by id, which the (team_id, mode, id) INCLUDE (updated_at) index
 * (migration 012) gives as one index-only range scan, and one plain aggregate takes them in that order: each
 * child's lines are picked by a FILTER on the child's digit. (A GROUP BY on the digit would sort the rows
 * again, once for the groups and once per `string_agg(… ORDER BY id)`, where the index already has them in order.)
 */
export function digestStatement(
  db: Db,
  d: QueryableResource,
  filters: readonly FilterPlan[],
  prefix: string,
  scope: Tenant,
  whole = false,
): CompiledQuery {
  const [low, high] = prefixBounds(prefix);
  // The child's digit, from the id's bytes: hex digit k is the high or low half of byte k / 2.
  const byte = sql`get_byte(uuid_send(${sql.ref('id')}), ${sql.lit(prefix.length >> 1)})`;
  const digit = prefix.length % 2 === 0 ? sql<number>`(${byte} >> 4)` : sql<number>`(${byte} & 15)`;
  const line = sql<string>`cast(${sql.ref('id')} as text) || ':' || ${servedUpdatedAt} || chr(10)`;
  let q = matching(db, d, filters, scope);
  if (prefix !== '') q = q.where(sql<SqlBool>`${sql.ref('id')} between ${cursorBound(low, 'uuid')} and ${cursorBound(high, 'uuid')}`);
  const lines = q.select([digit.as('digit'), line.as('line')]).orderBy('id', 'asc');
  const from = (db as unknown as { selectFrom(from: unknown): Query }).selectFrom(lines.as('lines'));
  // `whole`: the prefix's own entry (count and hash of all its records) as `count` and `sha256`.
  if (whole)
    return from
      .select([
        sql<string>`count(*)`.as('count'),
        sql<string>`encode(sha256(convert_to(string_agg(${sql.ref('line')}, ''), 'UTF8')), 'hex')`.as('sha256'),
      ])
      .compile();
  const columns = [...HEX_DIGITS].flatMap((hex, n) => {
    const mine = sql<SqlBool>`${sql.ref('digit')} = ${sql.lit(n)}`;
    return [
      sql<string>`count(*) filter (where ${mine})`.as(`count_${hex}`),
      sql<string>`encode(sha256(convert_to(string_agg(${sql.ref('line')}, '') filter (where ${mine}), 'UTF8')), 'hex')`.as(`sha256_${hex}`),
    ];
  });
  return from.select(columns).compile();
}
