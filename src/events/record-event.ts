// Records the event of one write inside the write's transaction, with a delivery row for every
// enabled webhook endpoint of the tenant that subscribes to its type, and a NOTIFY that wakes
// long polls and delivery workers once (and only if) the transaction commits.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../infra/db/database.ts';
import { outputRow } from '../query/output.ts';
import { descriptorMeta } from '../query/row-meta.ts';
import { getRecord } from '../resources/read-engine.ts';
import type { WrittenRecord } from '../resources/write-engine.ts';
import { type EventAction, eventType, isEventResource, patternsMatching } from './event-types.ts';

export const EVENTS_CHANNEL = 'balcao_events';
export const DELIVERIES_CHANNEL = 'balcao_webhook_deliveries';

/** Fields every update changes, which would make every `previous_attributes` noisy. */
const NOT_ATTRIBUTES = new Set(['updated_at']);

/** The payload of an events NOTIFY: the tenant, so only its waiters wake. */
export const tenantChannelKey = (teamId: string, mode: string): string => `${teamId}:${mode}`;

/**
 * A UUIDv7 whose 48-bit time is the event's millisecond and whose next 42 bits are the tenant's
 * event sequence: ordered by creation within a tenant even inside one millisecond.
 */
export function eventId(ms: number, sequence: number): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  const seq = BigInt(sequence) & ((1n << 42n) - 1n);
  const high = Number(seq >> 30n); // 12 bits
  const low = Number(seq & 0x3fffffffn); // 30 bits
  bytes[6] = 0x70 | (high >> 8);
  bytes[7] = high & 0xff;
  bytes.writeUInt32BE(((0b10 << 30) | low) >>> 0, 8);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function changedAttributes(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  for (const [field, old] of Object.entries(before)) {
    if (NOT_ATTRIBUTES.has(field) || !(field in after)) continue;
    if (JSON.stringify(old) !== JSON.stringify(after[field])) previous[field] = old;
  }
  return previous;
}

export async function recordEvent(trx: Db, written: WrittenRecord, requestId: string | null): Promise<void> {
  const { descriptor: d, tenant } = written;
  if (!isEventResource(d.name)) return;
  const object = (await getRecord(trx, d, tenant, written.id, {})).data;
  const previous =
    written.action === 'updated' && written.before
      ? changedAttributes(outputRow(written.before, descriptorMeta(d).fields, descriptorMeta(d)), object)
      : null;
  const type = eventType(d.name, written.action as EventAction);

  // The tenant's event counter row is locked until commit: the next event of this tenant takes its
  // time and id after this one is visible, so a reader walking forward never skips a late commit.
  const { rows } = await sql<{ value: number; at: string }>`
    INSERT INTO tenant_counters (team_id, mode, name, value) VALUES (${tenant.teamId}, ${tenant.mode}, 'events', 1)
    ON CONFLICT (team_id, mode, name) DO UPDATE SET value = tenant_counters.value + 1
    RETURNING value, to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at`.execute(trx);
  const { value, at } = rows[0] as { value: number; at: string };
  const id = eventId(Date.parse(at), Number(value));
  const data = JSON.stringify({ object, previous_attributes: previous });

  await sql`
    WITH event AS (
      INSERT INTO events (id, team_id, mode, type, resource, data, request_id, created_at)
      VALUES (${id}, ${tenant.teamId}, ${tenant.mode}, ${type}, ${d.name}, cast(cast(${data} as text) as jsonb), ${requestId},
              cast(cast(${at} as text) as timestamptz))
      RETURNING id
    ), deliveries AS (
      INSERT INTO webhook_deliveries (endpoint_id, event_id, next_attempt_at)
      SELECT e.id, event.id, now() FROM webhook_endpoints e, event
      WHERE e.team_id = ${tenant.teamId} AND e.mode = ${tenant.mode} AND e.enabled
        AND e.enabled_events && cast(ARRAY[${sql.join(patternsMatching(type))}] as text[])
      RETURNING 1
    )
    SELECT pg_notify(${EVENTS_CHANNEL}, ${tenantChannelKey(tenant.teamId, tenant.mode)}),
           CASE WHEN EXISTS (SELECT 1 FROM deliveries) THEN pg_notify(${DELIVERIES_CHANNEL}, '') END`.execute(trx);
}

/** The write engine's in-transaction extension for one request. */
export const eventRecorder =
  (requestId: string) =>
  (trx: Db, written: WrittenRecord): Promise<void> =>
    recordEvent(trx, written, requestId);
