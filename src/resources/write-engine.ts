// The one generic write path (POST/PATCH/DELETE) for every descriptor with a `write` section:
// validation errors merged into one 422, references checked inside the tenant, the write and
// its follow-ups in one transaction, the result read back through the read engine. A creation reads
// its record back inside its transaction and hands it to the caller's finishers there (the idempotency
// record stores the response): the write, its event and its stored response commit together or not at all.
// A creation whose answer is made from its own values (a sale) sends all its statements and its COMMIT in one
// round trip, so rows it locks until commit (the tenant's counters) are held while the server runs them (docs/performance.md).
import type { FieldError } from '../errors/app-error.ts';
import { errors } from '../errors/app-error.ts';
import type { Tenant } from '../domain/tenant.ts';
import { mergeFieldErrors, nulCharacterErrors } from '../http/body-validation.ts';
import type { Db } from '../infra/db/database.ts';
import {
  asItIs,
  everyMeaning,
  type FailureMeaning,
  type Placeholder,
  placeholder,
  type SentAhead,
  sendAhead,
} from '../infra/db/send-ahead.ts';
import { lockScoped, requireTenant, selectScoped, updateScoped } from '../infra/db/tenancy.ts';
import { onWriteLane } from '../infra/db/write-lanes.ts';
import { isUuid } from '../schemas/formats.ts';
import { fieldKind } from '../schemas/common.ts';
import { sql } from 'kysely';
import type { Shaped, SqlShape } from '../infra/db/sql-shape.ts';
import { randomUUID } from 'node:crypto';
import { outputRow, rowOutput } from '../query/output.ts';
import { descriptorMeta, rowMeta } from '../query/row-meta.ts';
import type { Body, IncludedRows, ResourceDescriptor, Row, StatementTail, WriteContext, WriteDescriptor } from './descriptor.ts';
import { insertStatement, isSqlFragment } from './insert-statement.ts';
import { etagOf, matchHolds, takeEtag, VERSION_KEY, versionSql } from './etag.ts';
import { NOW_VERSION_KEY, nextVersion, nowVersionSql } from '../query/version.ts';
import { getRecord } from './read-engine.ts';
import { claimExternalId, externalIdConflict, hasExternalIds, isExternalIdViolation, recordWithExternalId } from './external-id.ts';

export interface WriteOptions {
  /** Field errors the schema validation found (Ajv through `toFieldErrors`). */
  schemaErrors?: FieldError[];
  now?: () => number;
  /** Runs inside the creating transaction just before it commits (the idempotency claim marks itself). */
  beforeCommit?: (trx: Db) => Promise<void>;
  /** Runs inside every write's transaction once the record is final (the change feed records its event);
   *  in a creation, last, after the finishers. What it answers runs once the transaction has committed. */
  onWritten?: (trx: Db, written: WrittenRecord) => Promise<AfterCommit | undefined>;
  /**
   * A creation's `onWritten` as more CTEs of the creation's own statement, where the resource can carry them
   * (`SettledInInsert.joined`) and no finisher runs: the same work, one statement fewer. Its answer row is the
   * creation statement's.
   */
  joinWritten?: (written: WrittenRecord & { record: Row }) => JoinedWrite;
  /** With `inTransaction`: takes the work for after the caller's commit (an atomic batch runs it then). */
  afterCommit?: (work: AfterCommit) => void;
  /** Run in order inside a creating transaction, before `onWritten`, with the record as answered; a throw rolls back. */
  finishers?: readonly InTransactionFinisher[];
  /** PATCH/DELETE: the If-Match header; compared with the locked row's version, 412 when it does not hold. */
  ifMatch?: string | string[];
  /** `db` is already a transaction the caller commits (an atomic batch): the write runs in it. */
  inTransaction?: boolean;
  /** PATCH: when the change would set every field to the value it has, write nothing (no UPDATE, so no event, and
   *  updated_at and the ETag stay): the upsert's `unchanged`. */
  skipUnchanged?: boolean;
}

/** A later part of a write (its event) as the tail of the creation's statement (`WriteOptions.joinWritten`). */
export interface JoinedWrite {
  shape: Shaped<StatementTail>;
  /** What a failure of the statement means for this part (with the insert's own meaning, each told: everyMeaning). */
  meaning: FailureMeaning;
  /** Once committed, with the statement's answer row. */
  committed(row: unknown): void;
}

/** A write's in-transaction extensions, as the change feed gives them for one request. */
export interface WrittenExtensions {
  onWritten: NonNullable<WriteOptions['onWritten']>;
  joinWritten: NonNullable<WriteOptions['joinWritten']>;
}

/** The record written and its strong ETag (docs/api-guide.md). */
export interface TaggedRecord {
  data: Row;
  etag: string;
  /** With `skipUnchanged`: nothing was written, the record is as it was. */
  unchanged?: boolean;
}

/** Work for after a write's transaction has committed (the NOTIFY that wakes its event's readers). */
export type AfterCommit = () => void;

/**
 * A write's transaction failed on something it took for granted about the account, which changed meanwhile (an
 * sale's next number another writer took, src/resources/writes/transaction-number.ts). Nothing of the write committed: the engine runs it
 * once more, taking nothing for granted (`WrittenRecord.mayAssume` false).
 */
export class WriteMustRunAgain extends Error {
  constructor(why: string) {
    super(`the write runs again: ${why}`);
  }
}

/**
 * Runs `fn` in a new transaction, or in `db` itself when the caller already holds one, and the write's
 * after-commit work (its `onWritten` answer) once that transaction has committed: here, or by the caller.
 * A transaction of its own that fails with `WriteMustRunAgain` runs once more; a caller's cannot (`mayAssume` false).
 * With `lane` (a tenant's), a transaction of its own goes to that write lane where the database has lanes.
 */
async function transact<T>(
  db: Db,
  options: WriteOptions,
  lane: string | undefined,
  fn: (trx: Db, after: (work: AfterCommit | undefined) => void, mayAssume: boolean) => Promise<T>,
): Promise<T> {
  if (lane && !options.inTransaction) return onWriteLane(lane, () => transact(db, options, undefined, fn));
  const works: AfterCommit[] = [];
  const after = (work: AfterCommit | undefined) => {
    if (work) works.push(work);
  };
  if (options.inTransaction) {
    const result = await fn(db, after, false);
    for (const work of works) options.afterCommit?.(work);
    return result;
  }
  let result: T;
  try {
    result = await db.transaction().execute((trx) => fn(trx, after, true));
  } catch (err) {
    if (!(err instanceof WriteMustRunAgain)) throw err;
    works.length = 0;
    result = await db.transaction().execute((trx) => fn(trx, after, false));
  }
  for (const work of works) work();
  return result;
}

/** A tenant's write lane: its account in one mode. */
const laneOf = (tenant: Tenant): string => `${tenant.accountId}/${tenant.mode}`;

/** An extension of a creation's transaction that sees the record as the API answers with it. */
export type InTransactionFinisher = (trx: Db, written: WrittenRecord & { record: Row }) => Promise<void>;

/** What a write did, for extensions that run in its transaction. */
export interface WrittenRecord {
  descriptor: ResourceDescriptor;
  tenant: Tenant;
  id: string;
  action: 'created' | 'updated' | 'deleted';
  /** The stored row before an update or delete (all columns); null on creation. */
  before: Row | null;
  /** The record as a read of it answers after the write (without includes), so extensions need not read it again. */
  object: Row;
  /** On creation: fields of `object` (and the answered record) still holding a placeholder token, settled
   *  by a statement sent ahead; a stored copy replaces them in SQL (settledText). */
  placeholders?: readonly Placeholder[];
  /** On creation: the record as the API answers it, with its includes (a sale's items). */
  record?: Row;
  /** Whether an extension may rely on what it believes of the account and fail with `WriteMustRunAgain` when that
   *  no longer holds: true when the engine owns the transaction and has not run it again yet. */
  mayAssume: boolean;
}

/** A statement an extension writes inside the event's statement for a write, as one more CTE (the write log's entry,
 *  a new Idempotency-Key's record): one statement fewer per write. A beside that can fail the event's statement (a
 *  key already recorded breaks its unique index) gives that failure its meaning with `meaning`. */
export interface Beside {
  shape: SqlShape;
  meaning?: FailureMeaning;
}

export type WrittenBeside = (written: WrittenRecord) => Beside;

const notFoundReference = (field: string): FieldError => ({
  field,
  code: 'not_found',
  message: 'Registro não encontrado nesta conta.',
});

function writeOf(d: ResourceDescriptor): WriteDescriptor {
  if (!d.write) throw errors.internal(new Error(`${d.name} has no write section`));
  return d.write;
}

/** Referenced ids that are not records of the tenant (any state: a deactivated customer still exists). */
async function referenceErrors(
  db: Db,
  w: WriteDescriptor,
  tenant: Tenant,
  body: Body,
  refused: ReadonlySet<string>,
): Promise<FieldError[]> {
  const out: FieldError[] = [];
  for (const [field, table] of Object.entries(w.references ?? {})) {
    const value = body[field];
    if (refused.has(field) || typeof value !== 'string' || !isUuid(value)) continue;
    const found = await selectScoped(db, table, tenant).select('id').where('id', '=', value).executeTakeFirst();
    if (!found) out.push(notFoundReference(field));
  }
  return out;
}

export async function refuseInvalid(
  db: Db,
  w: WriteDescriptor,
  tenant: Tenant,
  raw: unknown,
  current: Row | undefined,
  options: WriteOptions,
) {
  // A missing or non-object body is already a schema error; the rules then see an empty one.
  const body: Body = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Body) : {};
  const found = mergeFieldErrors(options.schemaErrors ?? [], nulCharacterErrors(body), w.rules?.check?.(body, current) ?? []);
  const refs = await referenceErrors(db, w, tenant, body, new Set(found.map((e) => e.field)));
  const all = mergeFieldErrors(found, refs);
  if (all.length > 0) throw errors.bodyInvalid(all);
}

/** JSON columns take text cast to jsonb (a jsonb-typed parameter would be JSON-encoded again by
 *  postgres.js) and string arrays an ARRAY[...] of text: the same on both drivers. */
function columnValues(d: ResourceDescriptor, values: Row): Row {
  const out: Row = {};
  for (const [column, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const schema = d.row.properties[column];
    const kind = schema ? fieldKind(schema) : undefined;
    if (value !== null && kind === 'json' && !isSqlFragment(value))
      out[column] = sql`cast(cast(${JSON.stringify(value)} as text) as jsonb)`;
    else if (Array.isArray(value) && kind === 'text_array') {
      out[column] =
        value.length === 0 ? sql`cast(ARRAY[] as text[])` : sql`cast(ARRAY[${sql.join(value.map((v) => String(v)))}] as text[])`;
    } else out[column] = value;
  }
  return out;
}

async function readBack(db: Db, d: ResourceDescriptor, tenant: Tenant, id: string, include: readonly string[] = []): Promise<Row> {
  const query = include.length > 0 ? { include: include.join(',') } : {};
  return (await getRecord(db, d, tenant, id, query)).data;
}

/** The created record as a read of it answers, made from the rows the creation stored (RETURNING):
 *  undefined when an include the answer carries was not handed back, to be read instead. */
function answerOf(d: ResourceDescriptor, w: WriteDescriptor, row: Row, included: IncludedRows | undefined): Row | undefined {
  const meta = descriptorMeta(d);
  const record = outputRow(row, meta.fields, meta);
  for (const name of w.createIncludes ?? []) {
    const inc = d.includes?.[name];
    const rows = included?.[name];
    if (inc?.cardinality !== 'many' || !rows) return undefined;
    const itemMeta = rowMeta(inc.item);
    record[name] = rows.map(rowOutput(itemMeta.fields, itemMeta));
  }
  return record;
}

/** POST: 422 with every refused field, or the created record (with `createIncludes`). */
export async function createRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  body: Body,
  options: WriteOptions = {},
): Promise<Row> {
  const w = writeOf(d);
  const tenant = requireTenant(tenantOrNull, 'write');
  await refuseInvalid(db, w, tenant, body, undefined, options);
  // A creation that takes a counter in its insert and is answered from its own values awaits nothing before its
  // commit: it queues on its tenant's write lane instead of waiting for the counter's lock (write-lanes.ts).
  const lane = w.rules?.settledInInsert && w.rules.answeredFromValues ? laneOf(tenant) : undefined;
  const externalId = externalIdOf(d, body);
  const created = await externalIdsChecked(db, d, tenant, options, externalId, () =>
    transact(db, options, lane, async (trx, after, mayAssume) => {
      const ctx: WriteContext = { trx, tenant, now: options.now ?? Date.now, mayAssume };
      if (externalId !== undefined) await claimExternalId(trx, d, tenant, externalId, undefined);
      // The id is made here, not by the database, so the rows written with it can name it before the insert answers.
      const values = { ...(w.rules?.toInsert ? await w.rules.toInsert(ctx, body) : body), id: randomUUID() };
      // Answered from its own values, the insert need not return its row: nothing is awaited before the commit.
      const answered = w.rules?.answeredFromValues?.(values);
      const settling = w.rules?.settledInInsert?.(ctx, values, !answered, body);
      // The creation's event (with what goes beside it) as more CTEs of the insert's own statement, where the resource
      // offers it and no finisher must run between them: one statement fewer (SettledInInsert.joined).
      const joining = answered && settling?.joined && !options.finishers?.length ? options.joinWritten : undefined;
      if (settling?.before) await sendAhead(trx, settling.before);
      const meaning = settling?.meaning ?? asItIs;
      let inserted: SentAhead | undefined;
      let row: Row | undefined = answered;
      if (!joining) {
        const insert = settling ? settling.statement() : insertStatement(trx, d.table, tenant, [columnValues(d, values)], !answered);
        // Answered already, the insert is sent without waiting: it travels with the statements that follow it.
        if (answered) inserted = await sendAhead(trx, insert, meaning);
        else [row] = (await trx.executeQuery(insert).catch((err: unknown) => Promise.reject(meaning(err)))).rows as Row[];
      }
      if (!row) throw errors.internal(new Error(`${d.name}: the insert returned no row`));
      const record = answerOf(d, w, row, settling?.included) ?? (await readBack(trx, d, tenant, String(row.id), w.createIncludes));
      // A record answered before the database did carries placeholders for the fields the insert settles; what
      // stores a copy of the record replaces them in SQL, and the answer takes the insert's values after the commit.
      const placeholders: Placeholder[] = [];
      const settledFields = answered && settling ? (joining ? settling.joined?.fieldsInStatement : settling.fields) : undefined;
      for (const [field, value] of Object.entries(settledFields ?? {})) {
        const p = placeholder(value);
        record[field] = p.token;
        placeholders.push(p);
      }
      const object = { ...record };
      for (const name of w.createIncludes ?? []) delete object[name];
      const written: WrittenRecord = {
        descriptor: d,
        tenant,
        id: String(row.id),
        action: 'created',
        before: null,
        object,
        placeholders,
        mayAssume,
      };
      for (const finisher of options.finishers ?? []) await finisher(trx, { ...written, record });
      if (joining && settling?.joined) {
        const tail = joining({ ...written, record });
        const sent = await sendAhead(trx, settling.joined.statement(tail.shape), everyMeaning([meaning, tail.meaning]));
        inserted = sent;
        await options.beforeCommit?.(trx);
        after(
          () =>
            void sent.rows.then(
              ([answer]) => tail.committed(answer),
              () => {}, // not reached: the write committed, so its statement ran
            ),
        );
      } else {
        await options.beforeCommit?.(trx);
        after(await options.onWritten?.(trx, { ...written, record }));
      }
      return { record, settled: settledFields ? inserted?.rows : undefined, fields: Object.keys(settledFields ?? {}) };
    }),
  );
  if (!created.settled) return created.record;
  // Answered before the commit was (or, in a caller's transaction, on its own): the fields as stored. A joined
  // statement answers its tail's columns too; only the settled fields are the record's.
  const [values] = (await created.settled) as (Row | undefined)[];
  if (!values) throw errors.internal(new Error(`${d.name}: the settling statement answered no row`));
  const result = { ...created.record };
  for (const field of created.fields) result[field] = values[field];
  return result;
}

/** The row to change, locked for the rest of the transaction, with its ETag and the version a change gives it;
 *  404 when the tenant has no such record. */
async function lockRow(trx: Db, d: ResourceDescriptor, tenant: Tenant, id: string): Promise<{ row: Row; etag: string; next: NextVersion }> {
  const row = (await lockScoped(trx, d.table, tenant, id, d.where)
    .select([versionSql().as(VERSION_KEY), nowVersionSql().as(NOW_VERSION_KEY)])
    .executeTakeFirst()) as Row | undefined;
  if (!row) throw errors.notFound();
  // Every change moves updated_at strictly forward, even within one microsecond or when the clock
  // steps back: the version (ETag) of a record then changes with every write (docs/decisions.md).
  const next = nextVersion((row[VERSION_KEY] as string | null) ?? null, String(row[NOW_VERSION_KEY]));
  delete row[NOW_VERSION_KEY];
  return { etag: takeEtag(row), row, next };
}

type NextVersion = ReturnType<typeof nextVersion>;

/** Applies the change; answers the record as a read of it would (from the row the UPDATE returned) and its new ETag. */
async function applyChange(ctx: WriteContext, d: ResourceDescriptor, before: Row, next: NextVersion, values: Row): Promise<TaggedRecord> {
  const after = (await updateScoped(ctx.trx, d.table, ctx.tenant)
    // Bound as text, so the version keeps its microseconds whatever a driver makes of a timestamptz parameter.
    .set({ ...columnValues(d, values), updated_at: sql`cast(cast(${next.updatedAt} as text) as timestamptz)` })
    .where('id', '=', before.id)
    .returningAll()
    .executeTakeFirstOrThrow()) as Row;
  const etag = etagOf(after.id, next.version);
  await writeOf(d).rules?.afterChange?.(ctx, before, after);
  const meta = descriptorMeta(d);
  return { data: outputRow(after, meta.fields, meta), etag };
}

/**
 * Locks the tenant's row for one transaction and applies what `decide` returns; 404 outside the tenant.
 * Answers the record as written, which its event carries too: neither reads it again.
 */
async function changeRow(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  options: WriteOptions,
  action: 'updated' | 'deleted',
  decide: (ctx: WriteContext, current: Row) => Promise<Row>,
  externalId?: string,
): Promise<TaggedRecord> {
  const tenant = requireTenant(tenantOrNull, 'write');
  if (!isUuid(id)) throw errors.notFound();
  return externalIdsChecked(db, d, tenant, options, externalId, () =>
    transact(db, options, undefined, async (trx, after, mayAssume) => {
      const ctx: WriteContext = { trx, tenant, now: options.now ?? Date.now, mayAssume };
      const { row: current, etag: currentTag, next } = await lockRow(trx, d, tenant, id);
      // Compared under the row lock, so of two writers holding the same tag exactly one gets through.
      if (matchHolds(options.ifMatch, currentTag) === false) throw errors.preconditionFailed();
      const values = await decide(ctx, current);
      if (options.skipUnchanged && (await changesNothing(trx, d, tenant, String(current.id), values))) {
        const meta = descriptorMeta(d);
        return { data: outputRow(current, meta.fields, meta), etag: currentTag, unchanged: true };
      }
      const written = await applyChange(ctx, d, current, next, values);
      const object = { ...written.data };
      after(await options.onWritten?.(trx, { descriptor: d, tenant, id: String(current.id), action, before: current, object, mayAssume }));
      return written;
    }),
  );
}

/**
 * Whether setting `values` on the locked row would leave every column as it is, compared by the database in each
 * column's own type (a body's 10 and a stored 10.00 are one amount): the parameters are bound as an UPDATE binds them.
 */
async function changesNothing(trx: Db, d: ResourceDescriptor, tenant: Tenant, id: string, values: Row): Promise<boolean> {
  const columns = Object.entries(columnValues(d, values));
  if (columns.length === 0) return true;
  const same = sql.join(
    columns.map(([column, value]) => sql`${sql.ref(column)} IS NOT DISTINCT FROM ${value}`),
    sql` AND `,
  );
  const row = (await selectScoped(trx, d.table, tenant, d.where)
    .select(sql<boolean>`${same}`.as('same'))
    .where('id', '=', id)
    .executeTakeFirst()) as { same: boolean } | undefined;
  return row?.same === true;
}

/**
 * Runs a write whose statements may meet the external-id unique index: a second record refused there (a writer that
 * took no lock got there first) is a 409 naming the record that has it, read once the write's transaction is over.
 */
async function externalIdsChecked<T>(
  db: Db,
  d: ResourceDescriptor,
  tenant: Tenant,
  options: WriteOptions,
  externalId: string | undefined,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (externalId === undefined || !isExternalIdViolation(d, err)) throw err;
    // In a caller's transaction (an atomic batch), which the failure has aborted, nothing more can be read.
    throw externalIdConflict(options.inTransaction ? undefined : await recordWithExternalId(db, d, tenant, externalId));
  }
}

/** The external id a write body gives its record, where the resource has them (the body may be anything yet). */
const externalIdOf = (d: ResourceDescriptor, body: unknown): string | undefined => {
  const value = hasExternalIds(d) && body && typeof body === 'object' ? (body as Body).external_id : undefined;
  return typeof value === 'string' ? value : undefined;
};

/** PATCH: 404 for a record outside the tenant, 422 with every refused field, or the updated record. */
export async function updateRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  body: Body,
  options: WriteOptions = {},
): Promise<TaggedRecord> {
  const w = writeOf(d);
  return changeRow(
    db,
    d,
    tenantOrNull,
    id,
    options,
    'updated',
    async (ctx, current) => {
      await refuseInvalid(ctx.trx, w, ctx.tenant, body, current, options);
      const externalId = externalIdOf(d, body);
      if (externalId !== undefined && externalId !== current.external_id)
        await claimExternalId(ctx.trx, d, ctx.tenant, externalId, String(current.id));
      return w.rules?.toUpdate ? w.rules.toUpdate(ctx, body, current) : { ...body };
    },
    externalIdOf(d, body),
  );
}

/** DELETE: the soft delete of the descriptor (the record is kept); 404 outside the tenant. */
export async function deleteRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  options: WriteOptions = {},
): Promise<{ etag: string }> {
  const { softDelete } = writeOf(d);
  const { etag } = await changeRow(db, d, tenantOrNull, id, options, 'deleted', async () => ({ ...softDelete }));
  return { etag };
}
