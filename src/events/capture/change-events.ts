// Committed transactions → the events of the change feed. Per transaction and record, one event: a record's
// changes within a transaction (its row, and the rows of its children, such as a sale's items) are one change,
// from the record as it was before the transaction to the record as it is after it. Whether that is a
// creation, an update or a deletion is read from what the API serves: a row the API does not serve (a quote, a
// product with deleted_at) is no record; becoming one is a creation, ceasing to be one a deletion; a soft
// delete (the resource's soft-delete values, or is_active false) is a deletion too. `data.object` is the
// record exactly as GET returns it, made by the read engine's projection over the row image (one statement per
// table and batch), so events and reads can never disagree on a field.
import { sql } from 'kysely';
import { type Tenant, tenantKey } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import type { Row } from '../../infra/db/engine/row.ts';
import { quoteIdentifier } from '../../infra/db/engine/identifiers.ts';
import { selectScoped, tenantOfImage } from '../../infra/db/tenancy/tenancy.ts';
import { outputRow } from '../../query/output.ts';
import { descriptorMeta } from '../../query/row-meta.ts';
import { eventObjectOf, type ResourceDescriptor } from '../../resources/descriptor.ts';
import { isSqlFragment } from '../../resources/engines/insert-statement.ts';
import type { EventAction } from '../event-types.ts';
import type { CapturedTransaction, ImageKind, RowImage } from './captured.ts';
import { ERASURE_ORIGIN, IMPORT_ORIGIN } from './setup.ts';
import { SERVED_TABLES } from './served-tables.ts';

export interface EventOrigin {
  type: 'api' | 'outside';
  key_id?: string | null;
  request_id?: string | null;
}

/** An event as capture writes it (the events table's columns). */
export interface CapturedEvent {
  tenant: Tenant;
  type: string;
  resource: string;
  data: { object: Row; previous_attributes: Row | null };
  request_id: string | null;
  origin: EventOrigin;
  origin_key_id: string | null;
  /** Microseconds since the Unix epoch: the transaction's commit. */
  committedAtUs: number;
  /** Which record (table, tenant, id): one event per transaction and record. */
  record: string;
  descriptor: ResourceDescriptor;
  /** The record as served after the change, or null when it is no longer served. */
  served: Row | null;
  /** The change's previous values are withheld (an erasure's). */
  withheld: boolean;
}

/** The event as written: its type and data. */
export interface WrittenEvent {
  type: string;
  data: { object: Row; previous_attributes: Row | null };
}

/** One record's changes within one transaction. */
interface RecordChange {
  descriptor: ResourceDescriptor;
  tenant: Tenant;
  id: string;
  /** The row before the transaction: undefined when only children changed (the row is read as it is now). */
  before: RowImage | null | undefined;
  after: RowImage | null | undefined;
  /** The old row of the change that deleted it. */
  lastServed: RowImage | null;
}

/** Fields every update changes, which would make every `previous_attributes` noisy. */
const NOT_ATTRIBUTES = new Set(['updated_at']);

export function originOf(text: string | null): EventOrigin | 'import' | 'erasure' {
  if (text === null) return { type: 'outside' };
  if (text === IMPORT_ORIGIN) return 'import';
  if (text === ERASURE_ORIGIN) return 'erasure';
  try {
    const parsed = JSON.parse(text) as { key_id?: unknown; request_id?: unknown };
    return {
      type: 'api',
      key_id: typeof parsed.key_id === 'string' ? parsed.key_id : null,
      request_id: typeof parsed.request_id === 'string' ? parsed.request_id : null,
    };
  } catch {
    return { type: 'outside' };
  }
}

/** The origin a write through the API marks its transaction with. */
export const apiOriginText = (keyId: string | null, requestId: string | null): string =>
  JSON.stringify({ key_id: keyId, request_id: requestId });

/** A row the API serves as a record: the descriptor's fixed conditions hold on it. */
function servedRow(d: ResourceDescriptor, image: RowImage | null | undefined): boolean {
  if (!image) return false;
  for (const [column, allowed] of Object.entries(d.where ?? {})) {
    const value = image[column];
    if (allowed === null ? value !== null && value !== undefined : !allowed.includes(String(value))) return false;
  }
  return true;
}

/** The values a soft delete sets: the write side's (SQL fragments aside), else `is_active` false where the row has it. */
function softDeleteOf(d: ResourceDescriptor): Readonly<Record<string, unknown>> {
  if (d.write) return Object.fromEntries(Object.entries(d.write.softDelete).filter(([, v]) => !isSqlFragment(v)));
  return 'is_active' in d.row.properties ? { is_active: false } : {};
}

function softDeleted(d: ResourceDescriptor, object: Row): boolean {
  const values = Object.entries(softDeleteOf(d));
  return values.length > 0 && values.every(([field, value]) => object[field] === value);
}

function changedAttributes(before: Row, after: Row): Row {
  const previous: Row = {};
  for (const [field, old] of Object.entries(before)) {
    if (NOT_ATTRIBUTES.has(field) || !(field in after)) continue;
    const now = after[field];
    if (old === now) continue;
    if (old === null || now === null || typeof old !== 'object' || typeof now !== 'object' || JSON.stringify(old) !== JSON.stringify(now))
      previous[field] = old;
  }
  return previous;
}

const recordKey = (c: Pick<RecordChange, 'descriptor' | 'tenant' | 'id'>): string => `${c.descriptor.table}/${tenantKey(c.tenant)}/${c.id}`;

/** The records each transaction changed, in the order of their first change. */
function recordChanges(transaction: CapturedTransaction): RecordChange[] {
  const byKey = new Map<string, RecordChange>();
  for (const change of transaction.changes) {
    const table = SERVED_TABLES.get(change.table);
    const image = change.new ?? change.old;
    if (!table || !image) continue;
    const id = table.parentKey ? image[table.parentKey] : image.id;
    const tenant = tenantOfImage(image);
    if (typeof id !== 'string' || !tenant) continue;
    const key = recordKey({ descriptor: table.descriptor, tenant, id });
    let record = byKey.get(key);
    if (!record) {
      record = {
        descriptor: table.descriptor,
        tenant,
        id,
        before: undefined,
        after: undefined,
        lastServed: null,
      };
      byKey.set(key, record);
    }
    if (table.parentKey) continue;
    if (record.before === undefined) record.before = change.old;
    record.after = change.new;
    if (change.old) record.lastServed = change.old;
  }
  return [...byKey.values()];
}

/** The records of `images` as GET returns them: the read engine's projection of each row (a `json` image is read
 *  back into the table's row type first, by json_populate_recordset). */
async function servedObjects(db: Db, d: ResourceDescriptor, images: readonly RowImage[], kind: ImageKind): Promise<Row[]> {
  if (images.length === 0) return [];
  const meta = descriptorMeta(d);
  if (kind === 'row') return images.map((image) => outputRow(image, meta.fields, meta));
  const columns = meta.fields.map((f) => `r.${quoteIdentifier(f)}`).join(', ');
  const { rows } = await sql<Row>`SELECT r.ordinality AS "__ord", ${sql.raw(columns)}
    FROM json_populate_recordset(null::${sql.raw(quoteIdentifier(d.table))}, cast(cast(${JSON.stringify(images)} as text) as json)) WITH ORDINALITY AS r
    ORDER BY r.ordinality`.execute(db);
  return rows.map((row) => outputRow(row, meta.fields, meta));
}

/**
 * The records whose children alone changed, as they were then: the old row of the record's next change in the batch
 * (the row did not change in between), else the row as it is now (nothing changed it since), else, when a later
 * transaction not yet captured deleted it, the record as its last event showed it.
 */
async function recordsAsOfTheirChange(
  db: Db,
  kind: ImageKind,
  changes: readonly { change: RecordChange; index: number }[],
  later: (change: RecordChange, index: number) => RowImage | undefined,
): Promise<Map<RecordChange, Row | undefined>> {
  const out = new Map<RecordChange, Row | undefined>();
  const unresolved: RecordChange[] = [];
  const images = new Map<ResourceDescriptor, { change: RecordChange; image: RowImage }[]>();
  for (const { change, index } of changes) {
    const image = later(change, index);
    if (image === undefined) unresolved.push(change);
    else images.set(change.descriptor, [...(images.get(change.descriptor) ?? []), { change, image }]);
  }
  for (const [d, list] of images) {
    const served = list.filter(({ image }) => servedRow(d, image));
    const objects = await servedObjects(
      db,
      d,
      served.map(({ image }) => image),
      kind,
    );
    served.forEach(({ change }, i) => {
      out.set(change, objects[i]);
    });
  }
  const groups = new Map<string, RecordChange[]>();
  for (const change of unresolved) {
    const key = `${change.descriptor.table}/${tenantKey(change.tenant)}`;
    groups.set(key, [...(groups.get(key) ?? []), change]);
  }
  for (const group of groups.values()) {
    const [first] = group;
    if (!first) continue;
    const meta = descriptorMeta(first.descriptor);
    const rows = (await selectScoped(db, first.descriptor.table, first.tenant, first.descriptor.where)
      .select(meta.fields as string[])
      .where(
        'id',
        'in',
        group.map((c) => c.id),
      )
      .execute()) as Row[];
    const byId = new Map(rows.map((row) => [String(row.id), outputRow(row, meta.fields, meta)]));
    for (const change of group) out.set(change, byId.get(change.id) ?? (await lastEventObject(db, change)));
  }
  return out;
}

/** The record as its newest event showed it (the rare case of a record deleted before capture could read it). */
async function lastEventObject(db: Db, change: RecordChange): Promise<Row | undefined> {
  const rows = (await selectScoped(db, 'events', change.tenant)
    .select(sql<unknown>`data->'object'`.as('object'))
    .where('resource', '=', change.descriptor.name)
    .where(sql`data->'object'->>'id'`, '=', change.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .execute()) as { object: unknown }[];
  const object = rows[0]?.object;
  return typeof object === 'string' ? (JSON.parse(object) as Row) : ((object as Row | undefined) ?? undefined);
}

/** The events of committed transactions, in commit order and, within one, in the order of the records' first change. */
export async function eventsOf(db: Db, transactions: readonly CapturedTransaction[]): Promise<CapturedEvent[]> {
  const kind: ImageKind = transactions[0]?.images ?? 'row';
  const planned: { transaction: CapturedTransaction; origin: EventOrigin; change: RecordChange; withhold: boolean }[] = [];
  for (const transaction of transactions) {
    const marked = originOf(transaction.origin);
    if (marked === 'import') continue;
    // An erasure's events name the fields it changed, without their old (personal) values.
    const withhold = marked === 'erasure';
    const origin: EventOrigin = marked === 'erasure' ? { type: 'outside' } : marked;
    for (const change of recordChanges(transaction)) planned.push({ transaction, origin, change, withhold });
  }
  // The images each table's statement projects: before and after of every record whose row changed.
  const images = new Map<ResourceDescriptor, RowImage[]>();
  const slot = new Map<RowImage, number>();
  for (const { change } of planned) {
    for (const image of [change.before, change.after, change.lastServed]) {
      if (!image || slot.has(image) || !servedRow(change.descriptor, image)) continue;
      const list = images.get(change.descriptor) ?? [];
      slot.set(image, list.length);
      list.push(image);
      images.set(change.descriptor, list);
    }
  }
  const objects = new Map<ResourceDescriptor, Row[]>();
  for (const [d, list] of images) objects.set(d, await servedObjects(db, d, list, kind));
  const objectOf = (d: ResourceDescriptor, image: RowImage | null | undefined): Row | undefined => {
    const at = image ? slot.get(image) : undefined;
    return at === undefined ? undefined : objects.get(d)?.[at];
  };
  // A record whose children alone changed: its row as of then is the old row of its next change in the batch.
  const rowChanges = new Map<string, number[]>();
  planned.forEach(({ change }, index) => {
    if (change.before === undefined) return;
    const key = recordKey(change);
    rowChanges.set(key, [...(rowChanges.get(key) ?? []), index]);
  });
  const later = (record: RecordChange, index: number): RowImage | undefined => {
    const next = rowChanges.get(recordKey(record))?.find((i) => i > index);
    return next === undefined ? undefined : (planned[next]?.change.before ?? undefined);
  };
  const current = await recordsAsOfTheirChange(
    db,
    kind,
    planned.flatMap(({ change }, index) => (change.before === undefined ? [{ change, index }] : [])),
    later,
  );

  const events: CapturedEvent[] = [];
  for (const { transaction, origin, change, withhold } of planned) {
    const d = change.descriptor;
    let action: EventAction;
    let object: Row | undefined;
    let previous: Row | null = null;
    if (change.before === undefined) {
      // Only its children changed: the record as it is now, with nothing of its own changed.
      object = current.get(change);
      action = 'updated';
      previous = {};
    } else {
      const before = objectOf(d, change.before);
      const after = objectOf(d, change.after);
      if (!before && !after) continue;
      if (!before) {
        action = 'created';
        object = after;
      } else if (!after) {
        action = 'deleted';
        object = objectOf(d, change.lastServed) ?? before;
      } else {
        object = after;
        action = softDeleted(d, after) && !softDeleted(d, before) ? 'deleted' : 'updated';
        if (action === 'updated') previous = changedAttributes(before, after);
      }
    }
    if (!object) continue;
    if (withhold && previous) previous = withheld(previous);
    events.push({
      tenant: change.tenant,
      type: `${eventObjectOf(d)}.${action}`,
      resource: d.name,
      data: { object, previous_attributes: previous },
      request_id: origin.request_id ?? null,
      origin,
      origin_key_id: origin.key_id ?? null,
      committedAtUs: transaction.committedAtUs,
      record: recordKey(change),
      descriptor: d,
      served: action === 'deleted' && !objectOf(d, change.after) ? null : object,
      withheld: withhold,
    });
  }
  return events;
}

const withheld = (previous: Row): Row => Object.fromEntries(Object.keys(previous).map((field) => [field, null]));

/**
 * One record's event from two parts of one large transaction (change-capture.ts): `prior` as written for the
 * earlier parts, `next` the record's event in a later part. The record before the transaction is read back from
 * `prior` (an update's object with its previous attributes; a deletion's object stands in for it). Null when the
 * record was not served before the transaction and is not after it: no event.
 */
export function mergedEvent(prior: WrittenEvent, next: CapturedEvent): WrittenEvent | null {
  const d = next.descriptor;
  const priorAction = prior.type.slice(prior.type.lastIndexOf('.') + 1);
  const before =
    priorAction === 'created'
      ? null
      : priorAction === 'updated'
        ? { ...prior.data.object, ...(prior.data.previous_attributes ?? {}) }
        : prior.data.object;
  const after = next.served;
  if (!before && !after) return null;
  let action: EventAction;
  let object: Row;
  let previous: Row | null = null;
  if (!before) {
    action = 'created';
    object = after as Row;
  } else if (!after) {
    action = 'deleted';
    object = next.data.object;
  } else {
    object = after;
    action = softDeleted(d, after) && !softDeleted(d, before) ? 'deleted' : 'updated';
    if (action === 'updated') previous = changedAttributes(before, after);
  }
  if (next.withheld && previous) previous = withheld(previous);
  return { type: `${eventObjectOf(d)}.${action}`, data: { object, previous_attributes: previous } };
}

/** The channel key of an event's tenant. */
export const eventChannel = (event: CapturedEvent): string => tenantKey(event.tenant);
