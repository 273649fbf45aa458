// The one generic read path for every descriptor: list (keyset pages) and get by id (projection,
// includes), always inside the caller's tenant. Nothing here is specific to a resource.
import type { Pagination } from '../../http/envelope.ts';
import type { Tenant } from '../../domain/tenant.ts';
import type { CompiledQuery } from 'kysely';
import { AppError, errors } from '../../errors/app-error.ts';
import { hasSqlState } from '../../errors/database-errors.ts';
import { SQLSTATE } from '../../errors/sqlstate.ts';
import type { Row } from '../../infra/db/engine/row.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { requireTenant } from '../../infra/db/tenancy/tenancy.ts';
import {
  CURSOR_KEY,
  countStatement,
  estimateStatement,
  getStatement,
  includePageStatement,
  includeStatement,
  listStatement,
  PARENT_KEY,
} from '../../query/compile.ts';
import { encodeCursor } from '../../query/cursor.ts';
import { responseRowOutput } from '../../query/output.ts';
import { parseItemQuery, parseQuery } from '../../query/parse.ts';
import { type CountKind, EXACT_COUNT_BELOW, type FilterPlan, type ListPlan, planItem, planList } from '../../query/plan.ts';
import type { QueryableResource } from '../../query/contract.ts';
import { descriptorMeta, rowMeta } from '../../query/row-meta.ts';
import { isUuid } from '../../schemas/formats.ts';
import type { ResourceDescriptor } from '../descriptor.ts';
import { takeEtag } from './etag.ts';

export interface ReadResult<T> {
  data: T;
  /** True when `fields` dropped some fields: the reply needs the all-optional serializer. */
  sparse: boolean;
}

/** One record read: its strong ETag besides (the same for every `fields` and `include`). */
export interface RecordResult extends ReadResult<Row> {
  etag: string;
}

/** `conditions`: filters the route adds beyond the client's reach (the write log's key and retention). */
export async function listRecords(
  db: Db,
  d: QueryableResource,
  tenant: Tenant | null,
  query: unknown,
  conditions: readonly FilterPlan[] = [],
): Promise<ReadResult<Row[]> & { pagination: Pagination }> {
  const scope = requireTenant(tenant, 'read');
  const parsed = planList(d, parseQuery(query));
  const plan = conditions.length > 0 ? { ...parsed, filters: [...conditions, ...parsed.filters] } : parsed;
  const rows: Row[] = [];
  // One row past the page says whether another page exists, exactly.
  for (let segment = 0; rows.length <= plan.limit; segment++) {
    const statement = listStatement(db, d, plan, scope, segment, plan.limit + 1 - rows.length);
    if (!statement) break;
    rows.push(...((await db.executeQuery(statement)).rows as Row[]));
  }
  const hasMore = rows.length > plan.limit;
  const page = hasMore ? rows.slice(0, plan.limit) : rows;
  // The count and the page's includes are independent reads: they go out together.
  const [total] = await Promise.all([
    plan.count ? countRecords(db, d, plan.filters, scope, plan.count) : undefined,
    plan.includes.length > 0 ? attachIncludes(db, d, plan, page, scope) : undefined,
  ]);
  const last = page[page.length - 1];
  const { sort } = plan;
  const nextCursor =
    hasMore && last
      ? encodeCursor(
          sort.token,
          ((sort.kind === 'timestamp' ? last[CURSOR_KEY] : last[sort.field]) ?? null) as string | number | null,
          String(last.id),
        )
      : null;
  const meta = descriptorMeta(d);
  const output = responseRowOutput(plan.fields, meta);
  const data = page.map((row) => {
    const out = output(row);
    // Includes ride on the driver's row (attachIncludes); a projection's new object takes them over.
    if (out !== row) for (const name of plan.includes) out[name] = row[name];
    return out;
  });
  const pagination: Pagination = { next_cursor: nextCursor, has_more: hasMore, limit: plan.limit };
  if (total) Object.assign(pagination, { total_count: total.count, total_count_kind: total.kind });
  return { data, pagination, sparse: plan.fields.length < meta.fields.length };
}

/**
 * The includes of a whole page: one statement per include, whatever the number of records, each row of
 * it put on its parent row under the include's name (children in GET-by-id order, or the one row or null).
 */
async function attachIncludes(db: Db, d: QueryableResource, plan: ListPlan, page: readonly Row[], scope: Tenant): Promise<void> {
  await Promise.all(
    plan.includes.map(async (name) => {
      const inc = d.includes?.[name];
      if (!inc) return;
      const itemMeta = rowMeta(inc.item);
      const output = responseRowOutput(itemMeta.fields, itemMeta);
      const link = inc.cardinality === 'one' ? inc.foreignKey : 'id';
      const keys = [...new Set(page.flatMap((row) => (row[link] == null ? [] : [String(row[link])])))];
      const related = keys.length === 0 ? [] : ((await db.executeQuery(includePageStatement(db, inc, keys, scope))).rows as Row[]);
      if (inc.cardinality === 'one') {
        const byId = new Map(related.map((r) => [String(r.id), output(r)]));
        for (const row of page) row[name] = row[link] == null ? null : (byId.get(String(row[link])) ?? null);
        return;
      }
      const byParent = new Map<string, Row[]>();
      for (const r of related) {
        const parent = String(r[PARENT_KEY]);
        const children = byParent.get(parent);
        if (children) children.push(output(r));
        else byParent.set(parent, [output(r)]);
      }
      for (const row of page) row[name] = byParent.get(String(row.id)) ?? [];
    }),
  );
}

export interface TotalCount {
  count: number;
  kind: CountKind;
}

/**
 * How many records match the filters (never the cursor). `estimated` counts exactly up to EXACT_COUNT_BELOW
 * (a bounded scan), and past it takes the planner's estimate of the same selection (EXPLAIN, nothing run),
 * never less than what was counted. A count that runs past the statement timeout is answered 503 with a
 * detail saying so, not a 500.
 */
export async function countRecords(
  db: Db,
  d: QueryableResource,
  filters: readonly FilterPlan[],
  scope: Tenant,
  kind: CountKind,
): Promise<TotalCount> {
  try {
    if (kind === 'exact') return { count: Number(await firstValue(db, countStatement(db, d, filters, scope), 'total')), kind };
    const counted = Number(await firstValue(db, countStatement(db, d, filters, scope, EXACT_COUNT_BELOW), 'total'));
    if (counted < EXACT_COUNT_BELOW) return { count: counted, kind: 'exact' };
    const [row] = (await db.executeQuery(estimateStatement(db, d, filters, scope))).rows as Row[];
    return { count: Math.max(EXACT_COUNT_BELOW, plannedRows(row)), kind: 'estimated' };
  } catch (err) {
    throw tooSlow(err, 'count', 'Ask for `count=estimated`, or narrow the filters.');
  }
}

/** A statement past the statement timeout, answered as what it is: a 503 whose detail names the slow part. */
export function tooSlow(err: unknown, what: string, remedy: string): unknown {
  if (!hasSqlState(err, SQLSTATE.queryCanceled)) return err;
  const e = errors.serviceUnavailable(err);
  return new AppError('service_unavailable', {
    detail: `The ${what} took longer than the statement timeout allows. ${remedy}`,
    cause: err,
    headers: e.headers,
  });
}

async function firstValue(db: Db, statement: CompiledQuery, column: string): Promise<unknown> {
  const [row] = (await db.executeQuery(statement)).rows as Row[];
  return row?.[column];
}

/** `Plan Rows` of the top node of an EXPLAIN (FORMAT JSON): parsed by PGlite, text from postgres.js. */
function plannedRows(row: Row | undefined): number {
  const raw = row?.['QUERY PLAN'];
  const doc = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan?: { 'Plan Rows'?: unknown } }[] | undefined;
  const rows = Number(doc?.[0]?.Plan?.['Plan Rows']);
  return Number.isFinite(rows) ? Math.round(rows) : 0;
}

/** A conditional GET whose copy is current: only the tag is known, nothing else was read. */
export interface CurrentCopy {
  etag: string;
  notModified: true;
}

/** What names the record a GET by id reads. */
type RecordArgs = [db: Db, d: ResourceDescriptor, tenant: Tenant | null, id: string, query: unknown];

/**
 * GET by id. `isCurrent` (a conditional GET's If-None-Match) is asked the tag as soon as the record's row is read: when
 * the client's copy is current the answer is a 304, so the includes are not read at all.
 */
export function getRecord(...args: RecordArgs): Promise<RecordResult>;
export function getRecord(...args: [...RecordArgs, isCurrent: (etag: string) => boolean]): Promise<RecordResult | CurrentCopy>;
export async function getRecord(
  db: Db,
  d: ResourceDescriptor,
  tenant: Tenant | null,
  id: string,
  query: unknown,
  isCurrent?: (etag: string) => boolean,
): Promise<RecordResult | CurrentCopy> {
  const scope = requireTenant(tenant, 'read');
  const plan = planItem(d, parseItemQuery(query));
  // A malformed id cannot name a record: the same 404 as an unknown one or another account's.
  if (!isUuid(id)) throw errors.notFound();
  const includes = plan.includes.map((name) => [name, d.includes?.[name]] as const);
  const extra = includes.flatMap(([, inc]) => (inc?.cardinality === 'one' ? [inc.foreignKey] : []));
  const [row] = (await db.executeQuery(getStatement(db, d, plan.fields, id, scope, extra))).rows as (Row | undefined)[];
  if (!row) throw errors.notFound();
  const etag = takeEtag(row);
  if (isCurrent?.(etag)) return { etag, notModified: true };
  const meta = descriptorMeta(d);
  const data = responseRowOutput(plan.fields, meta)(row);
  // The includes are independent reads: they go out together.
  const related = await Promise.all(
    includes.map(([, inc]) =>
      !inc || (inc.cardinality === 'one' && row[inc.foreignKey] == null)
        ? []
        : db.executeQuery(includeStatement(db, inc, row, scope)).then((result) => result.rows as Row[]),
    ),
  );
  for (const [i, [name, inc]] of includes.entries()) {
    if (!inc) continue;
    const itemMeta = rowMeta(inc.item);
    const items = (related[i] as Row[]).map(responseRowOutput(itemMeta.fields, itemMeta));
    data[name] = inc.cardinality === 'one' ? (items[0] ?? null) : items;
  }
  return { data, sparse: plan.fields.length < meta.fields.length, etag };
}
