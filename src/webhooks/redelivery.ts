// Deliveries sent again on request: one delivery at once (`…/deliveries/{delivery_id}/retry`), or every
// retained event after a point of the feed (`…/replay`). Both only queue: the delivery worker sends them, with
// the event id as `webhook-id` as ever, and records each attempt. An existing delivery (succeeded, failed or
// still retrying) is put back as due; a replayed event without one gets one.
import { sql } from 'kysely';
import type { Tenant } from '../domain/tenant.ts';
import { AppError, errors, type FieldError } from '../errors/app-error.ts';
import { isUuid } from '../schemas/formats.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { accountColumnSql, conditionScopedSql } from '../infra/db/tenancy/tenancy.ts';
import { RETENTION_DAYS } from '../events/list-events.ts';
import { decodeCursor, encodeCursor } from '../query/cursor.ts';
import { getEndpoint } from './endpoint-repository.ts';
import { MAX_REPLAYED } from './endpoint-schema.ts';

/** The sort of the feed's forward cursors (`GET /v1/events?sort=created_at`). */
const FORWARD_SORT = 'created_at';

/** The delivery a retry names: by its id, or by the id of one of its attempts (the list's `id`). */
async function deliveryOf(db: Db, tenant: Tenant, endpointId: string, id: string): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    SELECT d.id FROM webhook_deliveries d
    WHERE ${conditionScopedSql({ accountId: tenant.accountId }, 'd')} AND d.endpoint_id = ${endpointId} AND d.id = ${id}
    UNION ALL
    SELECT a.delivery_id FROM webhook_attempts a
    WHERE ${conditionScopedSql(tenant, 'a')} AND a.endpoint_id = ${endpointId} AND a.id = ${id}
    LIMIT 1`.execute(db);
  const found = rows[0];
  if (!found) throw errors.notFound();
  return found.id;
}

/**
 * Puts the delivery back in the queue, due now, whatever its status: its next attempt is one more in the
 * deliveries list. An attempt in flight at that moment is that attempt. The endpoint belongs to the tenant
 * (checked first), so its deliveries do too.
 */
export async function retryDelivery(db: Db, tenant: Tenant, endpointId: string, id: string): Promise<string> {
  await getEndpoint(db, tenant, endpointId);
  if (!isUuid(id)) throw errors.notFound();
  const delivery = await deliveryOf(db, tenant, endpointId, id);
  await sql`
    UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now()
    WHERE ${conditionScopedSql({ accountId: tenant.accountId })} AND endpoint_id = ${endpointId} AND id = ${delivery}`.execute(db);
  return delivery;
}

export type ReplayFrom = { after: string } | { since: string };

export interface ReplayResult {
  queued: number;
  has_more: boolean;
  next_cursor: string | null;
}

/** The body's one starting point, or a 422 naming the fields. */
export function replayFrom(body: { after?: string | undefined; since?: string | undefined }): ReplayFrom {
  const given = (['after', 'since'] as const).filter((f) => body[f] !== undefined);
  if (given.length !== 1) {
    const message = 'Informe exatamente um de `after` (cursor do feed) e `since` (data e hora).';
    const fields: readonly string[] = given.length === 0 ? ['after', 'since'] : given;
    throw errors.bodyInvalid(fields.map((field): FieldError => ({ field, code: given.length === 0 ? 'required' : 'invalid', message })));
  }
  return body.after !== undefined ? { after: body.after } : { since: body.since as string };
}

/** The condition on `ev` that starts the replay after the cursor, or at the time. */
function startCondition(from: ReplayFrom) {
  if ('since' in from) return sql`ev.created_at >= cast(${from.since} as timestamptz)`;
  let position: { value: string | null; id: string };
  try {
    position = decodeCursor(from.after, FORWARD_SORT, 'timestamp', false);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    throw errors.bodyInvalid([
      { field: 'after', code: 'invalid_cursor', message: 'Cursor inválido: use um `next_cursor` de GET /v1/events?sort=created_at.' },
    ]);
  }
  return sql`(ev.created_at, ev.id) > (cast(${position.value} as timestamptz), cast(${position.id} as uuid))`;
}

/**
 * Queues, for the endpoint, every retained event of its tenant after `from` that it subscribes to, in feed
 * order (their due times grow by a microsecond each, and the worker claims by due time), at most MAX_REPLAYED
 * per call. One statement: the events are picked, delivered or put back as due, and the cursor after the last
 * one is read when more follow.
 */
export async function replayEvents(db: Db, tenant: Tenant, endpointId: string, from: ReplayFrom): Promise<ReplayResult> {
  await getEndpoint(db, tenant, endpointId);
  const { rows } = await sql<{ queued: number | string; picked: number | string; last_at: string | null; last_id: string | null }>`
    WITH picked AS (
      SELECT ev.id, ev.created_at FROM events ev JOIN webhook_endpoints e ON ${conditionScopedSql(tenant, 'e')} AND e.id = ${endpointId}
      WHERE ${conditionScopedSql(tenant, 'ev')} AND ${startCondition(from)}
        AND ev.created_at > now() - interval '${sql.raw(String(RETENTION_DAYS))} days'
        AND e.enabled_events && ARRAY[ev.type, split_part(ev.type, '.', 1) || '.*', '*']
        AND (ev.origin_key_id IS NULL OR NOT (cast(ev.origin_key_id as text) = ANY (e.excluded_key_ids)))
      ORDER BY ev.created_at, ev.id
      LIMIT ${MAX_REPLAYED + 1}
    ), chosen AS (
      SELECT id, created_at, row_number() OVER (ORDER BY created_at, id) AS n FROM picked ORDER BY created_at, id LIMIT ${MAX_REPLAYED}
    ), queued AS (
      INSERT INTO webhook_deliveries (${accountColumnSql()}, endpoint_id, event_id, next_attempt_at)
      SELECT cast(${tenant.accountId} as uuid), cast(${endpointId} as uuid), id, now() + n * interval '1 microsecond' FROM chosen
      ON CONFLICT (${accountColumnSql()}, endpoint_id, event_id) DO UPDATE SET status = 'pending', next_attempt_at = excluded.next_attempt_at
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM queued) AS queued, (SELECT count(*) FROM picked) AS picked,
      (SELECT to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM chosen ORDER BY n DESC LIMIT 1) AS last_at,
      (SELECT cast(id as text) FROM chosen ORDER BY n DESC LIMIT 1) AS last_id`.execute(db);
  const row = rows[0];
  const queued = Number(row?.queued ?? 0);
  const hasMore = Number(row?.picked ?? 0) > queued;
  return {
    queued,
    has_more: hasMore,
    next_cursor: hasMore && row?.last_at && row.last_id ? encodeCursor(FORWARD_SORT, row.last_at, row.last_id) : null,
  };
}

/** Wakes the delivery workers of every instance once the queue changed (a NOTIFY outside any transaction). */
export async function wakeDeliveryWorkers(db: Db, channel: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, '')`.execute(db);
}
