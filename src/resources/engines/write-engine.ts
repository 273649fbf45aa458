// The one generic write path (POST/PATCH/DELETE) for every descriptor with a `write` section. Each write reads
// validate → plan → send → answer: the body is checked (one 422 with every refused field, references inside the
// tenant); the plan is a value (the main statement, and the uniform parts every write adds: its origin mark, its
// write-log entry, its Idempotency-Key record); one compiler (`sendPlan`) sends it in one transaction; the answer
// is the record as a read of it would give it. A creation whose resource knows its answer before the database
// does (a sale, writes/sales.ts) plans every statement and its COMMIT as one round trip, on its tenant's write lane
// (docs/performance.md); any other creation reads its row back from its INSERT first.
import type { FieldError } from '../../errors/app-error.ts';
import { errors } from '../../errors/app-error.ts';
import { type Tenant, tenantKey } from '../../domain/tenant.ts';
import { mergeFieldErrors, nulCharacterErrors } from '../../http/body-validation.ts';
import type { CommitPosition } from '../../infra/db/statements/commit-lsn.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import {
  asItIs,
  everyMeaning,
  type FailureMeaning,
  type Placeholder,
  placeholder,
  type SentAhead,
} from '../../infra/db/statements/send-ahead.ts';
import { type WriteTransaction, writeTransaction } from '../../infra/db/statements/write-transaction.ts';
import { lockScoped, requireTenant, selectScoped, updateScoped } from '../../infra/db/tenancy/tenancy.ts';
import { isUuid } from '../../schemas/formats.ts';
import { fieldKind } from '../../schemas/common.ts';
import { type CompiledQuery, type RawBuilder, sql } from 'kysely';
import { sharedStatementCache } from '../../infra/db/statements/statement-cache.ts';
import { compiledShape, type Shaped, type SqlShape } from '../../infra/db/statements/sql-shape.ts';
import { randomUUID } from 'node:crypto';
import { outputRow, rowOutput } from '../../query/output.ts';
import { descriptorMeta, rowMeta } from '../../query/row-meta.ts';
import type {
  Body,
  CreationPlan,
  IncludedRows,
  ResourceDescriptor,
  Row,
  StatementTail,
  WriteContext,
  WriteDescriptor,
} from '../descriptor.ts';
import { insertCarryingTail, insertStatement, isSqlFragment } from './insert-statement.ts';
import { etagOf, matchHolds, takeEtag, VERSION_KEY, versionSql } from './etag.ts';
import { NOW_VERSION_KEY, nextVersion, nowVersionSql } from '../../query/version.ts';
import { getRecord } from './read-engine.ts';
import { refusedUnreadChange, takesUnreadChanges, unreadChangeMeaning, unreadChangeStatement } from './change-statement.ts';
import { type ChangedColumns, changedColumns, setOfChanged } from './changed-columns.ts';
import { claimExternalId, externalIdConflict, hasExternalIds, isExternalIdViolation, recordWithExternalId } from './external-id.ts';

export interface WriteOptions {
  /** Field errors the schema validation found (Ajv through `toFieldErrors`). */
  schemaErrors?: FieldError[];
  now?: () => number;
  /** The uniform parts of the write (its origin mark, write-log entry, Idempotency-Key record), for the record
   *  written: the plan's compiler sends them with the write (`sendPlan`). */
  parts?: WriteParts;
  /** A write transaction the caller commits (an atomic batch, an upsert): the write runs in it. */
  transaction?: WriteTransaction;
  /** With `transaction`: takes the work for after the caller's commit (an atomic batch runs it then). */
  afterCommit?: (work: AfterCommit) => void;
  /** Where the commit's position is noted (read-your-writes), for a transaction of the write's own. */
  commitPosition?: CommitPosition;
  /** PATCH/DELETE: the If-Match header; compared with the locked row's version, 412 when it does not hold. */
  ifMatch?: string | string[];
  /** PATCH: when the change would set every field to the value it has, write nothing (no UPDATE, so no event, and
   *  updated_at and the ETag stay): the upsert's `unchanged`. */
  skipUnchanged?: boolean;
}

/** The uniform parts of a write as CTEs (`StatementTail`): carried by the main statement where the plan lets it
 *  (a sale's INSERT), else sent as a statement of their own right after it. */
export interface WriteTail {
  shape: Shaped<StatementTail>;
  /** What a failure of the statement carrying it means for these parts (each part's meaning told: everyMeaning). */
  meaning: FailureMeaning;
  /** Once committed. */
  committed(): void;
}

/** The uniform parts of one request's write, made for the record written. */
export type WriteParts = (written: WrittenRecord) => WriteTail;

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
 * once more, taking nothing for granted (`WriteContext.mayAssume` false).
 */
export class WriteMustRunAgain extends Error {
  constructor(why: string) {
    super(`the write runs again: ${why}`);
  }
}

/**
 * Runs `fn` in a write transaction of its own (on `lane` where the database has lanes), or in the caller's
 * (`options.transaction`), and the after-commit work it gathers once that transaction has committed: here, or by
 * the caller. A transaction of its own that fails with `WriteMustRunAgain` runs once more; a caller's cannot.
 */
async function transact<T>(
  db: Db,
  options: WriteOptions,
  lane: string | undefined,
  fn: (tx: WriteTransaction, after: (work: AfterCommit) => void, mayAssume: boolean) => Promise<T>,
): Promise<T> {
  const works: AfterCommit[] = [];
  const after = (work: AfterCommit) => works.push(work);
  if (options.transaction) {
    // The caller's transaction goes on after this write: no statement of the write is its last.
    const shared = options.transaction;
    const result = await fn({ db: shared.db, sendAhead: (query, meaning) => shared.sendAhead(query, meaning) }, after, false);
    for (const work of works) options.afterCommit?.(work);
    return result;
  }
  const begin = { lane, commitPosition: options.commitPosition };
  let result: T;
  try {
    result = await writeTransaction(db, begin, (tx) => fn(tx, after, true));
  } catch (err) {
    if (!(err instanceof WriteMustRunAgain)) throw err;
    works.length = 0;
    // Run again off the lane: a second turn must not hold up the tenant's next writes.
    result = await writeTransaction(db, { commitPosition: options.commitPosition }, (tx) => fn(tx, after, false));
  }
  for (const work of works) work();
  return result;
}

/** What a write did, for the parts that go with it. */
export interface WrittenRecord {
  descriptor: ResourceDescriptor;
  tenant: Tenant;
  id: string;
  action: 'created' | 'updated' | 'deleted';
  /** The stored row before an update or delete (all columns); null on creation, and on a change made in one
   *  statement without reading the row (change-statement.ts). */
  before: Row | null;
  /** The record as a read of it answers after the write (without includes); absent on a change made in one
   *  statement, which the database answers only with the statement that carries these parts. */
  object?: Row;
  /** On creation: fields of `object` (and the answered record) still holding a placeholder token, settled
   *  by the main statement; a stored copy replaces them in SQL (settledText). */
  placeholders?: readonly Placeholder[];
  /** On creation: the record as the API answers it, with its includes (a sale's items). */
  record?: Row;
}

/** A part of a write's tail (the write log's entry, an Idempotency-Key's record), as one more CTE. A part that can
 *  fail the statement (a key already recorded breaks its unique index) gives that failure its meaning; a `checked`
 *  part must return a row, or the statement fails (division by zero: a held key taken over meanwhile). */
export interface Beside {
  shape: SqlShape;
  meaning?: FailureMeaning;
  checked?: boolean;
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

/** `refuseInvalid`'s `current` for a PATCH whose rules need no stored row (`WriteRules.unreadUpdate`): `check` passes. */
const UNREAD: Row = Object.freeze({});

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
  const checked = current === UNREAD ? [] : (w.rules?.check?.(body, current) ?? []);
  const found = mergeFieldErrors(options.schemaErrors ?? [], nulCharacterErrors(body), checked);
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
  // Validate.
  await refuseInvalid(db, w, tenant, body, undefined, options);
  const planner = w.rules?.planCreation;
  // A creation that awaits nothing before its commit queues on its tenant's write lane instead of waiting for
  // the rows it locks (write-lanes.ts).
  const lane = planner?.onLane ? tenantKey(tenant) : undefined;
  const externalId = externalIdOf(d, body);
  const created = await externalIdsChecked(db, d, tenant, options, externalId, () =>
    transact(db, options, lane, async (tx, after, mayAssume) => {
      const ctx: WriteContext = { trx: tx.db, tx, tenant, now: options.now ?? Date.now, mayAssume };
      if (externalId !== undefined) await claimExternalId(tx.db, d, tenant, externalId, undefined);
      // Plan. The id is made here, not by the database, so the rows written with it can name it before the insert answers.
      const values = { ...(w.rules?.toInsert ? await w.rules.toInsert(ctx, body) : body), id: randomUUID() };
      const plan = planner ? planner.plan(ctx, values, body) : insertPlan(d, ctx, values);
      // Send.
      return sendCreation(tx, d, w, tenant, plan, options.parts, after);
    }),
  );
  // Answer: a record answered before the database did takes the settled fields as stored once committed.
  return created.settled ? created.settled() : created.record;
}

/** The creation's plan of a resource without its own: its INSERT, answered with the row it returns, or from its
 *  values (`answersFromValues`) with the write's tail carried by the INSERT. */
function insertPlan(d: ResourceDescriptor, ctx: WriteContext, values: Row): CreationPlan {
  const row = columnValues(d, values);
  const main = () => insertStatement(ctx.trx, d.table, ctx.tenant, [row], true);
  if (!writeOf(d).rules?.answersFromValues) return { main };
  return {
    main,
    // A column the values leave out is null (outputRow), as the table stores it.
    answered: { row: values, settled: {} },
    carriesTail: { main: (tail) => insertCarryingTail(ctx.trx, d.table, ctx.tenant, row, tail), settledInStatement: {} },
  };
}

/** What sending a creation gives: its record, and when some fields were still placeholders, how to settle them. */
interface SentCreation {
  record: Row;
  settled?: () => Promise<Row>;
}

/**
 * The plan compiler of a creation: the plan's statements and the write's tail in one transaction. A plan that knows
 * its answer is sent without awaiting anything (the tail carried by its main statement where it can be, one round
 * trip with the COMMIT); one that does not awaits its INSERT's row first, then sends the tail.
 */
async function sendCreation(
  tx: WriteTransaction,
  d: ResourceDescriptor,
  w: WriteDescriptor,
  tenant: Tenant,
  plan: CreationPlan,
  parts: WriteParts | undefined,
  after: (work: AfterCommit) => void,
): Promise<SentCreation> {
  if (plan.before) await tx.sendAhead(plan.before);
  const meaning = plan.meaning ?? asItIs;
  const known = plan.answered;
  if (!known) {
    const [row] = (await tx.db.executeQuery(plan.main()).catch((err: unknown) => Promise.reject(meaning(err)))).rows as Row[];
    if (!row) throw errors.internal(new Error(`${d.name}: the insert returned no row`));
    const record = answerOf(d, w, row, plan.included) ?? (await readBack(tx.db, d, tenant, String(row.id), w.createIncludes));
    await sendTail(tx, parts?.(creation(d, tenant, record, [], w)), after);
    return { record };
  }
  // Answered before the database: the fields the main statement settles hold placeholders, which stored copies
  // (the key's response) replace in SQL; the tail reads them in the statement when the main statement carries it.
  const carried = parts && plan.carriesTail ? plan.carriesTail : undefined;
  const settling = carried ? carried.settledInStatement : known.settled;
  const record = answerOf(d, w, known.row, plan.included);
  if (!record) throw errors.internal(new Error(`${d.name}: a creation answered from its values lacks its includes`));
  const placeholders: Placeholder[] = [];
  for (const [field, value] of Object.entries(settling)) {
    const p = placeholder(value);
    record[field] = p.token;
    placeholders.push(p);
  }
  const tail = parts?.(creation(d, tenant, record, placeholders, w));
  let sent: SentAhead;
  if (carried && tail) {
    sent = await tx.sendAhead(carried.main(tail.shape), everyMeaning([meaning, tail.meaning]), LAST);
    after(tail.committed);
  } else {
    sent = await tx.sendAhead(plan.main(), meaning);
    await sendTail(tx, tail, after);
  }
  const fields = Object.keys(settling);
  return {
    record,
    settled: async () => {
      // The statement answers the tail's columns too; only the settled fields are the record's.
      const [values] = (await sent.rows) as (Row | undefined)[];
      if (!values) throw errors.internal(new Error(`${d.name}: the settling statement answered no row`));
      const result = { ...record };
      for (const field of fields) result[field] = values[field];
      return result;
    },
  };
}

/** What a creation wrote, for its tail: the record answered, and the object a read of it gives. */
function creation(d: ResourceDescriptor, tenant: Tenant, record: Row, placeholders: Placeholder[], w: WriteDescriptor): WrittenRecord {
  const object = { ...record };
  for (const name of w.createIncludes ?? []) delete object[name];
  return { descriptor: d, tenant, id: String(record.id), action: 'created', before: null, object, placeholders, record };
}

/** The statement cache's owner of the tails sent as statements of their own. */
export const TAIL_STATEMENT = { statement: 'write tail' };

/** A tail as a statement of its own, sent with what follows (its failure still fails the write). */
async function sendTail(tx: WriteTransaction, tail: WriteTail | undefined, after: (work: AfterCommit) => void): Promise<void> {
  if (!tail) return;
  await tx.sendAhead(compiledShape(tx.db, TAIL_STATEMENT, tailStatementShape(tail.shape)), tail.meaning);
  after(tail.committed);
}

const tailStatement = ({ ctes, columns }: StatementTail): RawBuilder<unknown> =>
  sql`WITH ${sql.join(
    ctes.map(([name, cte]) => sql`${sql.ref(name)} AS (${cte})`),
    sql`, `,
  )} SELECT ${sql.join(columns)}`;

export const tailStatementShape = (tail: Shaped<StatementTail>): SqlShape => ({
  key: tail.key,
  values: tail.values,
  build: (v) => tailStatement(tail.build(v)),
});

/** The row to change, locked for the rest of the transaction, with its ETag and the version a change gives it;
 *  404 when the tenant has no such record. */
async function lockRow(trx: Db, d: ResourceDescriptor, tenant: Tenant, id: string): Promise<{ row: Row; etag: string; next: NextVersion }> {
  // Built and compiled once per resource and mode (statement-cache.ts), then only bound: Kysely building and
  // compiling a change's lock and UPDATE on every request was most of what a PATCH cost Node beyond a GET.
  const query = sharedStatementCache(trx).statement(d, `write:lock:${tenant.mode}`, 0, [tenant.accountId, id], (v) => [
    lockScoped(trx, d.table, { accountId: String(v[0]), mode: tenant.mode }, String(v[1]), d.where).select([
      versionSql().as(VERSION_KEY),
      nowVersionSql().as(NOW_VERSION_KEY),
    ]),
  ]) as CompiledQuery;
  const row = (await trx.executeQuery(query)).rows[0] as Row | undefined;
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
  const [after] = (await ctx.trx.executeQuery(changeStatement(ctx.trx, d, ctx.tenant, String(before.id), values, next.updatedAt)))
    .rows as Row[];
  if (!after) throw errors.internal(new Error(`${d.name}: the locked row was not updated`));
  const etag = etagOf(after.id, next.version);
  await writeOf(d).rules?.afterChange?.(ctx, before, after);
  const meta = descriptorMeta(d);
  return { data: outputRow(after, meta.fields, meta), etag };
}

/**
 * The UPDATE of a change, returning the row. Built and compiled once per resource, mode and set of columns (a JSON
 * column's null and non-null take two shapes), then only bound; a change with a SQL fragment (a soft delete's
 * `now()`) or a string array, whose text depends on the value, is built each time.
 */
function changeStatement(trx: Db, d: ResourceDescriptor, tenant: Tenant, id: string, values: Row, updatedAt: string): CompiledQuery {
  const build = (accountId: string, set: Row, at: unknown, rowId: unknown) =>
    updateScoped(trx, d.table, { accountId, mode: tenant.mode })
      // Bound as text, so the version keeps its microseconds whatever a driver makes of a timestamptz parameter.
      .set({ ...set, updated_at: sql`cast(cast(${at} as text) as timestamptz)` })
      .where('id', '=', rowId)
      .returningAll();
  const changed = changedColumns(d, values);
  if (!changed || changed.shape === null) return build(tenant.accountId, columnValues(d, values), updatedAt, id).compile();
  const count = changed.columns.length;
  const bound = [tenant.accountId, ...changed.bound, updatedAt, id];
  return sharedStatementCache(trx).statement(d, `write:change:${tenant.mode}${changed.shape}`, 0, bound, (v) => [
    build(String(v[0]), setOfChanged(changed, v, 1), v[count + 1], v[count + 2]),
  ]) as CompiledQuery;
}

/**
 * A change (PATCH, DELETE): validate and plan under the row's lock (`decide`), send the UPDATE and the write's tail,
 * answer the record as written (which its tail carries too: neither reads it again). 404 outside the tenant.
 */
async function changeRow(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  options: WriteOptions,
  action: 'updated' | 'deleted',
  decide: (ctx: WriteContext, current: Row) => Promise<Row>,
  unread: ((tenant: Tenant) => Promise<Row | undefined>) | undefined,
  externalId?: string,
): Promise<TaggedRecord> {
  const tenant = requireTenant(tenantOrNull, 'write');
  if (!isUuid(id)) throw errors.notFound();
  // What the change sets when it can be one statement that does not read the row first (change-statement.ts).
  const values =
    unread && !options.transaction && !options.skipUnchanged && options.ifMatch === undefined && takesUnreadChanges(db)
      ? await unread(tenant)
      : undefined;
  const changed = values && changedColumns(d, values);
  if (changed) {
    try {
      return await changeUnread(db, d, tenant, id, options, action, changed);
    } catch (err) {
      if (!refusedUnreadChange(db, err)) throw err;
    }
  }
  return externalIdsChecked(db, d, tenant, options, externalId, () =>
    transact(db, options, undefined, async (tx, after, mayAssume) => {
      const ctx: WriteContext = { trx: tx.db, tx, tenant, now: options.now ?? Date.now, mayAssume };
      const { row: current, etag: currentTag, next } = await lockRow(tx.db, d, tenant, id);
      // Compared under the row lock, so of two writers holding the same tag exactly one gets through.
      if (matchHolds(options.ifMatch, currentTag) === false) throw errors.preconditionFailed();
      const values = await decide(ctx, current);
      if (options.skipUnchanged && (await changesNothing(tx.db, d, tenant, String(current.id), values))) {
        const meta = descriptorMeta(d);
        return { data: outputRow(current, meta.fields, meta), etag: currentTag, unchanged: true };
      }
      const written = await applyChange(ctx, d, current, next, values);
      const object = { ...written.data };
      await sendTail(tx, options.parts?.({ descriptor: d, tenant, id: String(current.id), action, before: current, object }), after);
      return written;
    }),
  );
}

/** A statement nothing but the COMMIT follows (`WriteTransaction.sendAhead`). */
const LAST = true;

/** A change in one statement, committed by itself in one round trip: the answer is the row it returned. */
async function changeUnread(
  db: Db,
  d: ResourceDescriptor,
  tenant: Tenant,
  id: string,
  options: WriteOptions,
  action: 'updated' | 'deleted',
  changed: ChangedColumns,
): Promise<TaggedRecord> {
  const tail = options.parts?.({ descriptor: d, tenant, id, action, before: null });
  const sent = await transact(db, options, undefined, async (tx, after) => {
    const statement = unreadChangeStatement(tx.db, d, tenant, id, changed, tail?.shape);
    const meaning = tail ? everyMeaning([unreadChangeMeaning, tail.meaning]) : unreadChangeMeaning;
    const answer = await tx.sendAhead(statement, meaning, LAST);
    if (tail) after(tail.committed);
    return answer;
  });
  const [row] = (await sent.rows) as Row[];
  if (!row) throw errors.internal(new Error(`${d.name}: a committed change answered no row`));
  const meta = descriptorMeta(d);
  return { data: outputRow(row, meta.fields, meta), etag: etagOf(row.id, row[VERSION_KEY]) };
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
    throw externalIdConflict(options.transaction ? undefined : await recordWithExternalId(db, d, tenant, externalId));
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
    w.rules?.unreadUpdate && externalIdOf(d, body) === undefined
      ? async (tenant) => {
          // A refused body (the schema's errors, or not an object at all) takes the locked path, which tells a missing
          // record (404) before a refused field (422); so does one a rule refuses.
          if ((options.schemaErrors?.length ?? 0) > 0 || !body || typeof body !== 'object' || Array.isArray(body)) return undefined;
          const values = w.rules?.unreadUpdate?.(body);
          if (!values) return undefined;
          return refuseInvalid(db, w, tenant, body, UNREAD, options).then(
            () => values,
            () => undefined,
          );
        }
      : undefined,
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
  const decided = async () => ({ ...softDelete });
  const { etag } = await changeRow(db, d, tenantOrNull, id, options, 'deleted', decided, decided);
  return { etag };
}
