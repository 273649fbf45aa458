// The one generic read path for every descriptor: list (keyset pages) and get by id (projection,
// includes), always inside the caller's tenant. Nothing here is specific to a resource.
import type { Pagination } from '../http/envelope.ts';
import type { Tenant } from '../domain/tenant.ts';
import { errors } from '../errors/app-error.ts';
import type { Row } from '../infra/db/row.ts';
import type { Db } from '../infra/db/database.ts';
import { requireTenant } from '../infra/db/tenancy.ts';
import { CURSOR_KEY, getStatement, includeStatement, listStatement } from '../query/compile.ts';
import { encodeCursor } from '../query/cursor.ts';
import { responseRowOutput } from '../query/output.ts';
import { parseItemQuery, parseQuery } from '../query/parse.ts';
import { type FilterPlan, planItem, planList } from '../query/plan.ts';
import type { QueryableResource } from '../query/contract.ts';
import { descriptorMeta, rowMeta } from '../query/row-meta.ts';
import { isUuid } from '../schemas/formats.ts';
import type { ResourceDescriptor } from './descriptor.ts';
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
  return {
    data: page.map(responseRowOutput(plan.fields, meta)),
    pagination: { next_cursor: nextCursor, has_more: hasMore, limit: plan.limit },
    sparse: plan.fields.length < meta.fields.length,
  };
}

export async function getRecord(db: Db, d: ResourceDescriptor, tenant: Tenant | null, id: string, query: unknown): Promise<RecordResult> {
  const scope = requireTenant(tenant, 'read');
  const plan = planItem(d, parseItemQuery(query));
  // A malformed id cannot name a record: the same 404 as an unknown one or another account's.
  if (!isUuid(id)) throw errors.notFound();
  const includes = plan.includes.map((name) => [name, d.includes?.[name]] as const);
  const extra = includes.flatMap(([, inc]) => (inc?.cardinality === 'one' ? [inc.foreignKey] : []));
  const [row] = (await db.executeQuery(getStatement(db, d, plan.fields, id, scope, extra))).rows as (Row | undefined)[];
  if (!row) throw errors.notFound();
  const etag = takeEtag(row);
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
