// A transaction too large to hold at once (a 100 000-row UPDATE by another writer), captured part by part as the
// stream reads it, in one capture transaction: its events become visible together at that transaction's commit,
// with the new position, like any other's, and what is held in memory is one part and an id per record.
// One event per transaction and record still: a record a later part changes again has its event rewritten, from
// the record before the transaction (read back from the event as written) to the record after the later change.
// The origin is known for certain only at the Commit (an API write's mark may follow its changes): events written
// with another are corrected then, and their webhook deliveries chosen again.
import { sql } from 'kysely';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { type WriteTransaction, writeTransaction } from '../../infra/db/statements/write-transaction.ts';
import { conditionScopedSql } from '../../infra/db/tenancy/tenancy.ts';
import { movePosition } from './capture-position.ts';
import type { CapturedTransaction } from './captured.ts';
import { type CapturedEvent, eventsOf, mergedEvent, originOf, type WrittenEvent } from './change-events.ts';
import { type EventClock, fanOut, recordEvents } from './record-events.ts';

/** An event written for an earlier part. */
interface Emitted {
  id: string;
  tenant: Tenant;
  type: string;
}

/** Events per statement of the corrections made at the Commit. */
const CHUNK = 1_000;

/** The transaction ended at or before the position capture started from: it was captured already. */
export class CapturedAlready extends Error {}

export class PartedCapture {
  /** Per record (change-events.ts `record`), its event so far. */
  private readonly emitted = new Map<string, Emitted>();
  /** The origins parts were captured with. */
  private readonly origins = new Set<string | null>();
  private readonly parts: { part: CapturedTransaction; processed: () => void }[] = [];
  private wake: (() => void) | undefined;
  private abandoned = false;
  /** Settles when the capture transaction committed (or failed): its events and the position it moved to. */
  readonly done: Promise<{ events: number; position: number }>;

  constructor(
    db: Db,
    private readonly source: string,
    private readonly from: number,
    private readonly clock: EventClock,
  ) {
    this.done = writeTransaction(db, {}, (tx) => this.run(tx));
    this.done.catch(() => {}); // whoever hands the next part, or awaits the end, hears the failure
  }

  /** Hands over the next part (the last one is the transaction at its Commit); resolves once it is captured. */
  add(part: CapturedTransaction): Promise<void> {
    return new Promise((resolve, reject) => {
      this.parts.push({ part, processed: resolve });
      this.wake?.();
      this.done.then(undefined, reject);
    });
  }

  /** The rest of the transaction will not come (its session ended): the capture transaction rolls back. */
  abandon(): void {
    this.abandoned = true;
    this.wake?.();
  }

  private async next(): Promise<{ part: CapturedTransaction; processed: () => void }> {
    for (;;) {
      if (this.abandoned) throw new Error('the large transaction being captured was not read to its end');
      const first = this.parts.shift();
      if (first) return first;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private async run(tx: WriteTransaction): Promise<{ events: number; position: number }> {
    await tx.sendAhead(sql`SET LOCAL statement_timeout = 0`.compile(tx.db));
    for (;;) {
      const { part, processed } = await this.next();
      if (!part.part && part.position <= this.from) throw new CapturedAlready();
      this.origins.add(part.origin);
      await this.capturePart(tx, part);
      if (part.part) {
        processed();
        continue;
      }
      await this.settleOrigin(tx, part.origin);
      await movePosition(tx, this.source, this.from, part.position);
      processed();
      return { events: this.emitted.size, position: part.position };
    }
  }

  /** The part's events: new records' written, records of earlier parts' rewritten. */
  private async capturePart(tx: WriteTransaction, part: CapturedTransaction): Promise<void> {
    const events = await eventsOf(tx.db, [part]);
    const fresh: CapturedEvent[] = [];
    const again: CapturedEvent[] = [];
    for (const event of events) (this.emitted.has(event.record) ? again : fresh).push(event);
    const { recorded, ids } = await recordEvents(tx, fresh, this.clock);
    fresh.forEach((event, i) => {
      this.emitted.set(event.record, { id: ids[i] as string, tenant: event.tenant, type: event.type });
    });
    if (again.length > 0) await this.rewrite(tx, again);
    // Its statements answered before the next part is read: what they carried can go.
    await recorded;
  }

  private async rewrite(tx: WriteTransaction, events: readonly CapturedEvent[]): Promise<void> {
    for (const event of events) {
      const emitted = this.emitted.get(event.record) as Emitted;
      const scope = conditionScopedSql(emitted.tenant);
      const { rows } = await sql<{ type: string; data: unknown }>`SELECT type, data FROM events
        WHERE ${scope} AND id = ${emitted.id}`.execute(tx.db);
      const prior = rows[0];
      if (!prior) continue;
      const merged = mergedEvent({ type: prior.type, data: parsed(prior.data) as WrittenEvent['data'] }, event);
      if (!merged) {
        // Not served before the transaction, nor after it: no event (its deliveries go with it).
        await sql`DELETE FROM events WHERE ${scope} AND id = ${emitted.id}`.execute(tx.db);
        this.emitted.delete(event.record);
        continue;
      }
      await sql`UPDATE events SET type = ${merged.type}, data = ${JSON.stringify(merged.data)}
        WHERE ${scope} AND id = ${emitted.id}`.execute(tx.db);
      if (merged.type !== emitted.type) {
        emitted.type = merged.type;
        await this.routeAgain(tx, [emitted], event.origin_key_id);
      }
    }
  }

  /** Events written with an origin other than the transaction's are corrected, and routed again. */
  private async settleOrigin(tx: WriteTransaction, text: string | null): Promise<void> {
    if (this.origins.size === 1 && this.origins.has(text)) return;
    const marked = originOf(text);
    const all = [...this.emitted.values()];
    for (let start = 0; start < all.length; start += CHUNK) {
      const chunk = all.slice(start, start + CHUNK);
      const ids = `{${chunk.map((e) => e.id).join(',')}}`;
      if (marked === 'import') {
        await sql`DELETE FROM events WHERE id = ANY (cast(${ids} as uuid[]))`.execute(tx.db);
        continue;
      }
      const origin = marked === 'erasure' ? { type: 'outside' as const } : marked;
      await sql`UPDATE events SET origin = ${JSON.stringify(origin)}, request_id = ${origin.request_id ?? null},
          origin_key_id = ${origin.key_id ?? null}
        WHERE id = ANY (cast(${ids} as uuid[]))`.execute(tx.db);
      if (marked === 'erasure') await this.withholdPrevious(tx, chunk);
      await this.routeAgain(tx, chunk, origin.key_id ?? null);
    }
    if (marked === 'import') this.emitted.clear();
  }

  /** An erasure's events name the fields it changed, without their old (personal) values (change-events.ts). */
  private async withholdPrevious(tx: WriteTransaction, events: readonly Emitted[]): Promise<void> {
    for (const { id, tenant } of events) {
      const scope = conditionScopedSql(tenant);
      const { rows } = await sql<{ data: unknown }>`SELECT data FROM events WHERE ${scope} AND id = ${id}`.execute(tx.db);
      const data = parsed(rows[0]?.data);
      if (!data?.previous_attributes) continue;
      const previous = Object.fromEntries(Object.keys(data.previous_attributes).map((field) => [field, null]));
      await sql`UPDATE events SET data = ${JSON.stringify({ ...data, previous_attributes: previous })}
        WHERE ${scope} AND id = ${id}`.execute(tx.db);
    }
  }

  /** The events' deliveries chosen again (their type or origin changed). */
  private async routeAgain(tx: WriteTransaction, events: readonly Emitted[], originKeyId: string | null): Promise<void> {
    const ids = `{${events.map((e) => e.id).join(',')}}`;
    await sql`DELETE FROM webhook_deliveries WHERE event_id = ANY (cast(${ids} as uuid[]))`.execute(tx.db);
    const { rows } = await fanOut(
      tx,
      events.map(({ id, tenant, type }) => ({ id, tenant, type, origin_key_id: originKeyId })),
    );
    await rows;
  }
}

/** An event's data as the driver gives it (a json column: parsed already, or text). */
const parsed = (data: unknown): WrittenEvent['data'] | undefined =>
  (typeof data === 'string' ? JSON.parse(data) : data) as WrittenEvent['data'] | undefined;
