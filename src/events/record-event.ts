// Records the event of one write inside the write's transaction, with a delivery row for every
// enabled webhook endpoint of the tenant that subscribes to its type (none, without a query, for a tenant
// known to have no endpoint: fan-out.ts); once (and only if) the transaction commits, a NOTIFY wakes long
// polls and delivery workers (commit-notifier.ts).
import { type RawBuilder, sql } from 'kysely';
import type { Tenant } from '../domain/tenant.ts';
import { EVENTS_COUNTER } from '../domain/numbering.ts';
import type { Db } from '../infra/db/database.ts';
import { tenantChannelKey } from './channels.ts';
import type { CommitNotifier } from './commit-notifier.ts';
import { FanOutMemory } from './fan-out.ts';
import { everyMeaning, type Placeholder, sendAhead, settledTextShape } from '../infra/db/send-ahead.ts';
import { compiledShape, composedShape, plainValues, type Shaped, type SqlShape } from '../infra/db/sql-shape.ts';
import { accountColumnSql, columnsScopedSql, conditionScopedSql, valuesScopedSql } from '../infra/db/tenancy.ts';
import { outputRow } from '../query/output.ts';
import { descriptorMeta } from '../query/row-meta.ts';
import { eventObjectOf, type StatementTail } from '../resources/descriptor.ts';
import type { AfterCommit, Beside, JoinedWrite, WrittenBeside, WrittenExtensions, WrittenRecord } from '../resources/write-engine.ts';
import { type EventAction, eventType, patternsMatching } from './event-types.ts';

/** Fields every update changes, which would make every `previous_attributes` noisy. */
const NOT_ATTRIBUTES = new Set(['updated_at']);

function changedAttributes(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  for (const [field, old] of Object.entries(before)) {
    if (NOT_ATTRIBUTES.has(field) || !(field in after)) continue;
    if (JSON.stringify(old) !== JSON.stringify(after[field])) previous[field] = old;
  }
  return previous;
}

/** The statement cache's owner of the event statements' shapes. */
export const EVENT_STATEMENT = { statement: 'event' };

/**
 * The event's CTEs from its parts: the values (tenant, type, resource, request id, and with fan-out the patterns its
 * type matches), the event's data as settled text, and the besides (each one more CTE). With fan-out or without, two
 * shapes of their own (the key names which). As a statement of its own (`WITH … SELECT …`), or the tail of a new
 * sale's insert, which then answers these columns beside its own: recorded, deliveries, has_endpoints, and without
 * fan-out `without_endpoints` (its belief's check).
 */
const eventSql =
  (fanOut: boolean) =>
  ([, data, ...besides]: RawBuilder<unknown>[], [values]: (readonly unknown[])[]): StatementTail => {
    const [accountId, mode, type, resource, requestId, ...patterns] = values ?? [];
    const tenant = { accountId, mode } as Tenant;
    // The tenant's event counter row stays locked until commit, so the next event of this tenant takes its time
    // and id after this one is visible: a reader walking forward never skips a late commit. Its time is never
    // earlier than the tenant's previous event's (last_at, kept under that lock), so (created_at, id) grows in
    // lock order: no volatile function in RETURNING, which Citus refuses. The id is a UUIDv7: 48 bits of
    // milliseconds, the version, 42 bits of the tenant's event sequence (ordered within a millisecond too) around
    // the variant, 32 random bits. Without fan-out (src/events/fan-out.ts), the statement divides by zero when the
    // tenant's counter row says an endpoint appeared: the row is locked by then, so an endpoint that commits later
    // is seen by later events.
    const ctes: (readonly [string, RawBuilder<unknown>])[] = [
      [
        'seq',
        sql`INSERT INTO tenant_counters (${columnsScopedSql(['name', 'value', 'last_at'])}) VALUES (${valuesScopedSql(tenant)}, ${EVENTS_COUNTER}, 1, clock_timestamp())
      ON CONFLICT (${columnsScopedSql(['name'])}) DO UPDATE
        SET value = tenant_counters.value + 1, last_at = greatest(excluded.last_at, tenant_counters.last_at)
      RETURNING value, last_at AS at, has_endpoints`,
      ],
      [
        'event',
        sql`INSERT INTO events (${columnsScopedSql(['id', 'type', 'resource', 'data', 'request_id', 'created_at'])})
      SELECT ${valuesScopedSql(tenant)}, cast(
          lpad(to_hex(cast(floor(extract(epoch from at) * 1000) as bigint)), 12, '0') || '7' ||
          lpad(to_hex((value >> 30) & 4095), 3, '0') || to_hex(8 | ((value >> 28) & 3)) ||
          lpad(to_hex(value & 268435455), 7, '0') || substr(md5(random()::text), 1, 8) as uuid),
        ${type}, ${resource}, cast(${data} as json), ${requestId}, at
      FROM seq
      RETURNING id`,
      ],
    ];
    if (fanOut)
      ctes.push([
        'deliveries',
        sql`INSERT INTO webhook_deliveries (${accountColumnSql()}, endpoint_id, event_id, next_attempt_at)
      SELECT ${accountColumnSql('e')}, e.id, event.id, now() FROM webhook_endpoints e, event
      WHERE ${conditionScopedSql(tenant, 'e')} AND e.enabled
        AND e.enabled_events && cast(ARRAY[${sql.join(patterns)}] as text[])
      RETURNING 1`,
      ]);
    besides.forEach((beside, i) => {
      ctes.push([`beside_${i}`, beside]);
    });
    const recorded = sql`(SELECT count(*) FROM event)`.as('recorded');
    return {
      ctes,
      columns: fanOut
        ? [recorded, sql`EXISTS (SELECT 1 FROM deliveries)`.as('deliveries'), sql`(SELECT has_endpoints FROM seq)`.as('has_endpoints')]
        : [
            recorded,
            sql`false`.as('deliveries'),
            sql`false`.as('has_endpoints'),
            sql`(SELECT 1 / (1 - cast(has_endpoints as integer)) FROM seq)`.as('without_endpoints'),
          ],
    };
  };

const eventWithFanOut = eventSql(true);
const eventWithoutFanOut = eventSql(false);

/** The event's CTEs and columns as a shape: `data` (its JSON) with the record's placeholders settled, and the besides. */
export function eventShape(
  tenant: Tenant,
  type: string,
  resource: string,
  requestId: string | null,
  data: string,
  placeholders: readonly Placeholder[] | undefined,
  besides: readonly Beside[],
  fanOut: boolean,
): Shaped<StatementTail> {
  return composedShape(
    fanOut ? 'event, fan-out' : 'event',
    [
      plainValues(tenant.accountId, tenant.mode, type, resource, requestId, ...(fanOut ? patternsMatching(type) : [])),
      settledTextShape(data, placeholders),
      ...besides.map((b) => b.shape),
    ],
    fanOut ? eventWithFanOut : eventWithoutFanOut,
  );
}

/** The event as a statement of its own. */
export function eventStatementShape(event: Shaped<StatementTail>): SqlShape {
  return { key: event.key, values: event.values, build: (values) => ownStatement(event.build(values)) };
}

const ownStatement = ({ ctes, columns }: StatementTail): RawBuilder<unknown> =>
  sql`WITH ${sql.join(
    ctes.map(([name, cte]) => sql`${sql.ref(name)} AS (${cte})`),
    sql`, `,
  )} SELECT ${sql.join(columns)}`;

/** The event of `written`, to be sent in a statement of its own (`recordEvent`) or inside another (`joinWritten`). */
export function prepareEvent(
  written: WrittenRecord,
  requestId: string | null,
  notifier: CommitNotifier | undefined,
  besides: readonly Beside[] = [],
  fanOutMemory: FanOutMemory = new FanOutMemory(),
): JoinedWrite {
  const { descriptor: d, tenant, object } = written;
  const previous =
    written.action === 'updated' && written.before
      ? changedAttributes(outputRow(written.before, descriptorMeta(d).fields, descriptorMeta(d)), object)
      : null;
  const type = eventType(eventObjectOf(d), written.action as EventAction);
  const data = JSON.stringify({ object, previous_attributes: previous });
  const key = tenantChannelKey(tenant.accountId, tenant.mode);
  const fanOut = fanOutMemory.fansOut(key, written.mayAssume);
  // A beside that can fail the statement names its own failures.
  const meanings = [...(fanOut ? [] : [fanOutMemory.meaning(key)]), ...besides.flatMap((b) => (b.meaning ? [b.meaning] : []))];
  return {
    shape: eventShape(tenant, type, d.name, requestId, data, written.placeholders, besides, fanOut),
    meaning: everyMeaning(meanings),
    committed(row) {
      const answer = (row ?? {}) as { deliveries?: unknown; has_endpoints?: unknown };
      fanOutMemory.learn(key, Boolean(answer.has_endpoints));
      notifier?.committed(key, Boolean(answer.deliveries));
    },
  };
}

/** Writes the event in a statement of its own; answers what wakes its readers once the transaction has committed. */
export async function recordEvent(
  trx: Db,
  written: WrittenRecord,
  requestId: string | null,
  notifier: CommitNotifier | undefined,
  besides: readonly Beside[] = [],
  fanOutMemory: FanOutMemory = new FanOutMemory(),
): Promise<AfterCommit> {
  const event = prepareEvent(written, requestId, notifier, besides, fanOutMemory);
  // Built and compiled once per shape (sql-shape.ts): a write binds its values only. Its answer is read after the
  // commit: the statement goes out with it (a failure still fails the write).
  const sent = await sendAhead(trx, compiledShape(trx, EVENT_STATEMENT, eventStatementShape(event.shape)), event.meaning);
  return () =>
    void sent.rows.then(
      ([row]) => event.committed(row),
      () => {}, // not reached: the write committed, so its event's statement ran
    );
}

/** The write engine's in-transaction extensions for one request; `besides` go out in the event's statement. */
export const eventRecorder = (notifier: CommitNotifier | undefined) => {
  const fanOutMemory = new FanOutMemory();
  return (requestId: string, besides: readonly WrittenBeside[] = []): WrittenExtensions => ({
    onWritten: (trx, written) =>
      recordEvent(
        trx,
        written,
        requestId,
        notifier,
        besides.map((beside) => beside(written)),
        fanOutMemory,
      ),
    joinWritten: (written) =>
      prepareEvent(
        written,
        requestId,
        notifier,
        besides.map((beside) => beside(written)),
        fanOutMemory,
      ),
  });
};
