// Writes captured events in the capture's transaction: the events (ids and times that grow in capture order,
// which is commit order), each tenant's events counter (the retention purge walks tenants by it; it is locked
// before the deliveries, the lock order endpoint changes follow too), one delivery per subscribed enabled
// endpoint that does not exclude the key the event was written through, and the NOTIFYs that wake long polls and delivery workers once it commits. Capture is the only
// writer of events, so none of this waits on another writer's locks.
import { randomFillSync } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { EVENTS_COUNTER } from '../../domain/numbering.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import type { SentAhead } from '../../infra/db/statements/send-ahead.ts';
import type { WriteTransaction } from '../../infra/db/statements/write-transaction.ts';
import { DELIVERIES_CHANNEL, EVENTS_CHANNEL } from '../channels.ts';
import { patternsMatching } from '../event-types.ts';
import { type CapturedEvent, eventChannel } from './change-events.ts';
import type { Tenant } from '../../domain/tenant.ts';
import {
  accountColumnSql,
  columnsScopedSql,
  sameScopeSql,
  tenantColumnsOf,
  tenantFields,
  tenantsRecordsetSql,
} from '../../infra/db/tenancy/tenancy.ts';

/** Rows per statement: a large transaction's events go out in several. */
const CHUNK = 1_000;

/**
 * Event ids and times in capture order: a time never earlier than the last one's (a commit's time may be a
 * little earlier than an earlier commit's), and a UUIDv7 whose 48-bit milliseconds and 42-bit sequence grow
 * with it, ending in 32 random bits. (created_at, id) then grows with every event, which is the feed's order.
 */
export class EventClock {
  private lastUs = 0;
  private lastMs = -1;
  private sequence = 0;

  /** Starts after the newest event there is. */
  startAfter(latestUs: number): void {
    this.lastUs = Math.max(this.lastUs, latestUs + 1);
  }

  next(committedAtUs: number): { id: string; createdAt: string } {
    const us = Math.max(committedAtUs, this.lastUs);
    this.lastUs = us;
    const ms = Math.floor(us / 1000);
    this.sequence = ms === this.lastMs ? this.sequence + 1 : 0;
    this.lastMs = ms;
    const seq = this.sequence;
    const hex =
      ms.toString(16).padStart(12, '0') +
      '7' +
      (Math.floor(seq / 2 ** 30) & 0xfff).toString(16).padStart(3, '0') +
      (8 | (Math.floor(seq / 2 ** 28) & 3)).toString(16) +
      (seq & 0xfffffff).toString(16).padStart(7, '0') +
      randomHex8();
    const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
    const createdAt = `${new Date(ms).toISOString().slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`;
    return { id, createdAt };
  }
}

/** Random bytes drawn a pool at a time: one call to the system's generator per 1 024 events, not one per event. */
const randomPool = Buffer.alloc(4096);
let randomAt = randomPool.length;
function randomHex8(): string {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  randomAt += 4;
  return randomPool.toString('hex', randomAt - 4, randomAt);
}

/** The newest event's time, in microseconds since the Unix epoch (0 without events). */
export async function latestEventUs(db: Db): Promise<number> {
  const { rows } = await sql<{
    us: string | null;
  }>`SELECT (extract(epoch from max(created_at)) * 1000000)::bigint::text AS us FROM events`.execute(db);
  return Number(rows[0]?.us ?? 0);
}

export interface Recorded {
  events: number;
  deliveries: number;
  tenants: string[];
}

/** The batch's writes, sent ahead in `tx` (they travel with its COMMIT); `recorded` settles once they answered.
 *  `ids`: the events' ids, in their order. */
export async function recordEvents(
  tx: WriteTransaction,
  events: readonly CapturedEvent[],
  clock: EventClock,
): Promise<{ recorded: Promise<Recorded>; ids: string[] }> {
  if (events.length === 0) return { recorded: Promise.resolve({ events: 0, deliveries: 0, tenants: [] }), ids: [] };
  const trx = tx.db;
  const send = (statement: RawBuilder<unknown>) => tx.sendAhead(statement.compile(trx));
  const rows = events.map((event) => {
    const { id, createdAt } = clock.next(event.committedAtUs);
    return { event, id, createdAt };
  });
  const perTenant = new Map<string, { tenant: Tenant; value: number; last_at: string }>();
  for (const { event, createdAt } of rows) {
    const key = eventChannel(event);
    const counter = perTenant.get(key) ?? { tenant: event.tenant, value: 0, last_at: createdAt };
    counter.value += 1;
    counter.last_at = createdAt;
    perTenant.set(key, counter);
  }
  const counters = JSON.stringify([...perTenant.values()].map(({ tenant, value, last_at }) => tenantFields(tenant, { value, last_at })));
  await send(sql`INSERT INTO tenant_counters (${columnsScopedSql(['name', 'value', 'last_at'])})
    SELECT ${tenantColumnsOf('c')}, ${EVENTS_COUNTER}, c.value, c.last_at
    FROM ${tenantsRecordsetSql(counters, 'c', 'value bigint, last_at timestamptz')}
    ON CONFLICT (${columnsScopedSql(['name'])}) DO UPDATE
      SET value = tenant_counters.value + excluded.value, last_at = greatest(excluded.last_at, tenant_counters.last_at)`);
  const fannedOut: SentAhead[] = [];
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    const json = JSON.stringify(
      chunk.map(({ event, id, createdAt }) =>
        tenantFields(event.tenant, {
          id,
          type: event.type,
          resource: event.resource,
          data: event.data,
          request_id: event.request_id,
          origin: event.origin,
          origin_key_id: event.origin_key_id,
          created_at: createdAt,
        }),
      ),
    );
    await send(sql`INSERT INTO events (${columnsScopedSql(['id', 'type', 'resource', 'data', 'request_id', 'origin', 'origin_key_id', 'created_at'])})
      SELECT ${tenantColumnsOf('e')}, e.id, e.type, e.resource, e.data, e.request_id, e.origin, e.origin_key_id, e.created_at
      FROM ${tenantsRecordsetSql(json, 'e', 'id uuid, type text, resource text, data json, request_id text, origin json, origin_key_id uuid, created_at timestamptz')}`);
    fannedOut.push(
      await fanOut(
        tx,
        chunk.map(({ event, id }) => ({ tenant: event.tenant, id, type: event.type, origin_key_id: event.origin_key_id })),
      ),
    );
  }
  const tenants = [...perTenant.keys()];
  await send(sql`SELECT pg_notify(${EVENTS_CHANNEL}, t) FROM unnest(cast(${`{${tenants.join(',')}}`} as text[])) AS t`);
  const recorded = Promise.all(fannedOut.map(({ rows }) => rows)).then((answers) => {
    let deliveries = 0;
    for (const rows of answers) deliveries += Number((rows[0] as { deliveries?: number } | undefined)?.deliveries ?? 0);
    return { events: rows.length, deliveries, tenants };
  });
  recorded.catch(() => {}); // the transaction's COMMIT reports a failure first
  return { recorded, ids: rows.map(({ id }) => id) };
}

/** What picks an event's webhook endpoints. */
export interface EventRouting {
  tenant: Tenant;
  id: string;
  type: string;
  origin_key_id: string | null;
}

/** One delivery per subscribed enabled endpoint of each event's tenant that does not exclude the key it was written
 *  through, sent ahead in `tx`; the delivery workers are woken by the statement when it queued any. It reads what
 *  picks the endpoints, not the events' records (the bulk of a batch's bytes). */
export function fanOut(tx: WriteTransaction, events: readonly EventRouting[]): Promise<SentAhead> {
  const routing = JSON.stringify(
    events.map(({ tenant, id, type, origin_key_id }) => tenantFields(tenant, { id, patterns: patternsMatching(type), origin_key_id })),
  );
  return tx.sendAhead(
    sql`WITH fanned AS (INSERT INTO webhook_deliveries (${accountColumnSql()}, endpoint_id, event_id, next_attempt_at)
        SELECT ${accountColumnSql('w')}, w.id, e.id, now()
        FROM ${tenantsRecordsetSql(routing, 'e', 'id uuid, patterns text[], origin_key_id text')}
        JOIN webhook_endpoints w ON ${sameScopeSql('w', 'e', 'tenant')}
        WHERE w.enabled AND w.enabled_events && e.patterns
          AND (e.origin_key_id IS NULL OR NOT (e.origin_key_id = ANY (w.excluded_key_ids)))
        RETURNING 1)
      SELECT count(*)::int AS deliveries, (SELECT count(pg_notify(${DELIVERIES_CHANNEL}, '')) FROM (SELECT 1 FROM fanned LIMIT 1) AS queued) AS woken
      FROM fanned`.compile(tx.db),
  );
}
