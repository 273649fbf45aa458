// Events older than the feed's retention go, with their deliveries and attempts (ON DELETE CASCADE). The
// purge walks each tenant's own keyset index (team_id, mode, created_at, id), one tenant at a time, from
// the tenants' events counters (every event's statement moves its tenant's): so no index on created_at
// alone is kept up by every write for the purge's sake (migration 008, docs/performance.md).
import { sql } from 'kysely';
import { EVENTS_COUNTER } from '../domain/numbering.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { sameScopeSql } from '../infra/db/tenancy/tenancy.ts';
import { RETENTION_DAYS } from './list-events.ts';

/** Deletes the events of every tenant older than RETENTION_DAYS; returns how many. */
export async function purgeExpiredEvents(db: Db): Promise<number> {
  const result = await sql`
    DELETE FROM events e USING tenant_counters c
    WHERE c.name = ${EVENTS_COUNTER} AND ${sameScopeSql('e', 'c', 'tenant')}
      AND e.created_at < now() - interval '${sql.raw(String(RETENTION_DAYS))} days'`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
