// GET /v1/webhook-endpoints/{id}/deliveries: the endpoint's attempts, newest first, in keyset
// pages (`limit`, `cursor`), each with its outcome and when the next attempt is due.
import { sql } from 'kysely';
import type { Tenant } from '../http/context.ts';
import type { Pagination } from '../http/envelope.ts';
import type { Db } from '../infra/db/database.ts';
import { decodeCursor, encodeCursor } from '../query/cursor.ts';
import { outputRow } from '../query/output.ts';
import { planLimit } from '../query/plan.ts';
import { rowMeta } from '../query/row-meta.ts';
import { getEndpoint } from './endpoint-repository.ts';
import { webhookAttemptRow } from './endpoint-schema.ts';

type Row = Record<string, unknown>;
const SORT = '-created_at';
const meta = rowMeta(webhookAttemptRow);

export async function listAttempts(
  db: Db,
  tenant: Tenant,
  endpointId: string,
  query: Row,
): Promise<{ data: Row[]; pagination: Pagination }> {
  await getEndpoint(db, tenant, endpointId);
  const limit = planLimit(typeof query.limit === 'string' ? query.limit : undefined);
  const after = typeof query.cursor === 'string' && query.cursor !== '' ? decodeCursor(query.cursor, SORT, 'timestamp', false) : null;
  let q = db
    .selectFrom('webhook_attempts as a')
    .innerJoin('events as e', 'e.id', 'a.event_id')
    .where('a.endpoint_id', '=', endpointId)
    .select([
      'a.id',
      'a.event_id',
      'e.type as event_type',
      'a.attempt_number',
      'a.created_at',
      'a.response_status',
      'a.error',
      'a.response_body',
      'a.duration_ms',
      'a.next_attempt_at',
      sql<string>`case when a.response_status between 200 and 299 then 'succeeded' when a.next_attempt_at is null then 'failed' else 'retrying' end`.as(
        'status',
      ),
      sql<string>`to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_value'),
    ])
    .orderBy('a.created_at', 'desc')
    .orderBy('a.id', 'desc')
    .limit(limit + 1);
  if (after) q = q.where(sql`(a.created_at, a.id) < (cast(${after.value} as timestamptz), cast(${after.id} as uuid))` as never);
  const rows = (await q.execute()) as Row[];
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    data: page.map((r) => outputRow(r, meta.fields, meta)),
    pagination: {
      next_cursor: hasMore && last ? encodeCursor(SORT, String(last.cursor_value), String(last.id)) : null,
      has_more: hasMore,
      limit,
    },
  };
}
