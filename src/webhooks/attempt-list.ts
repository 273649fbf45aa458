// GET /v1/webhook-endpoints/{id}/deliveries: the endpoint's attempts, newest first, in keyset
// pages (`limit`, `cursor`), each with its outcome and when the next attempt is due; filtered by
// `filter[status][eq|in]` and `filter[event_type][eq|in]`.
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Tenant } from '../domain/tenant.ts';
import type { Pagination } from '../http/envelope.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { selectScoped } from '../infra/db/tenancy/tenancy.ts';
import { cursorBound } from '../query/compile.ts';
import { decodeCursor, encodeCursor } from '../query/cursor.ts';
import { outputRow } from '../query/output.ts';
import { type RawFilter, parseQuery } from '../query/parse.ts';
import { planLimit } from '../query/plan.ts';
import { refuse } from '../query/refusals.ts';
import { rowMeta } from '../query/row-meta.ts';
import { getEndpoint } from './endpoint-repository.ts';
import { type WebhookAttempt, webhookAttemptRow } from './endpoint-schema.ts';
import type { Row } from '../infra/db/engine/row.ts';

const SORT = '-created_at';
const meta = rowMeta(webhookAttemptRow);

/** An attempt's status, from what it got and whether another attempt follows. */
const STATUS_SQL = sql<string>`case when response_status between 200 and 299 then 'succeeded' when next_attempt_at is null then 'failed' else 'retrying' end`;
const STATUSES: readonly string[] = webhookAttemptRow.properties.status.enum;

/** The filters the list takes: field → its SQL and the values it may be compared with (null: any). */
const FILTERS: Record<string, { column: RawBuilder<unknown>; values: readonly string[] | null }> = {
  status: { column: STATUS_SQL, values: STATUSES },
  event_type: { column: sql.ref('event_type'), values: null },
};

/** `filter[status|event_type][eq|in]` as conditions; anything else spelled as a filter is refused (422). */
function filterConditions(filters: readonly RawFilter[]): RawBuilder<SqlBool>[] {
  return filters.map(({ field, op, value }) => {
    const filter = FILTERS[field];
    if (!filter) throw refuse.filterField(field);
    if (op !== 'eq' && op !== 'in') throw refuse.filterOperator(field, op);
    const values = value === null ? [] : op === 'in' ? value.split(',').map((v) => v.trim()) : [value];
    if (values.length === 0 || values.some((v) => v === '' || (filter.values !== null && !filter.values.includes(v))))
      throw refuse.filterValue(field);
    return sql<SqlBool>`${filter.column} in (${sql.join(values)})`;
  });
}

export async function listAttempts(
  db: Db,
  tenant: Tenant,
  endpointId: string,
  query: Row,
): Promise<{ data: WebhookAttempt[]; pagination: Pagination }> {
  await getEndpoint(db, tenant, endpointId);
  const conditions = filterConditions(parseQuery(query).filters);
  const limit = planLimit(typeof query.limit === 'string' ? query.limit : undefined);
  const after = typeof query.cursor === 'string' && query.cursor !== '' ? decodeCursor(query.cursor, SORT, 'timestamp', false) : null;
  let q = selectScoped(db, 'webhook_attempts', tenant)
    .where('endpoint_id', '=', endpointId)
    .select([
      'id',
      'delivery_id',
      'event_id',
      'event_type',
      'attempt_number',
      'created_at',
      'response_status',
      'error',
      'response_body',
      'duration_ms',
      'next_attempt_at',
      STATUS_SQL.as('status'),
      sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_value'),
    ])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(sql.lit(limit + 1));
  for (const condition of conditions) q = q.where(condition as never);
  if (after) {
    q = q.where(sql`(created_at, id) < (${cursorBound(String(after.value), 'timestamp')}, ${cursorBound(after.id, 'uuid')})` as never);
  }
  const rows = (await q.execute()) as Row[];
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    data: page.map((r) => outputRow(r, meta.fields, meta) as WebhookAttempt),
    pagination: {
      next_cursor: hasMore && last ? encodeCursor(SORT, String(last.cursor_value), String(last.id)) : null,
      has_more: hasMore,
      limit,
    },
  };
}
