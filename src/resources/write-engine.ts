// The one generic write path (POST/PATCH/DELETE) for every descriptor with a `write` section:
// validation errors merged into one 422, references checked inside the tenant, the write and
// its follow-ups in one transaction, the result read back through the read engine inside that
// transaction, and then the caller's finishers, still inside it (the idempotency record stores
// the response, an event row is written): all of it commits together or not at all.
import type { FieldError } from '../errors/app-error.ts';
import { errors } from '../errors/app-error.ts';
import type { Tenant } from '../http/context.ts';
import { mergeFieldErrors, nulCharacterErrors } from '../http/body-validation.ts';
import type { Db } from '../infra/db/database.ts';
import { scoped } from '../query/compile.ts';
import { isUuid } from '../query/values.ts';
import { fieldKind } from '../schemas/common.ts';
import { type RawBuilder, sql } from 'kysely';
import type { ResourceDescriptor, WriteDescriptor } from './descriptor.ts';
import { getRecord } from './read-engine.ts';

export type Row = Record<string, unknown>;
export type Body = Record<string, unknown>;

/** What a rule sees: the open transaction, the tenant and the clock. */
export interface WriteContext {
  trx: Db;
  tenant: Tenant;
  now: () => number;
}

export interface WriteRules {
  /** Cross-field checks a schema cannot say. `current` is the stored row on PATCH, undefined on POST.
   *  Runs even when the schema refused some fields, so it must not trust the body's types. */
  check?(body: Body, current: Row | undefined): FieldError[];
  /** The columns of the new row, from the validated body (defaults, computed values). Default: the body. */
  toInsert?(ctx: WriteContext, body: Body): Promise<Row> | Row;
  /** Follow-up writes of a creation, in its transaction (sale items, first status-history entry). */
  afterInsert?(ctx: WriteContext, row: Row, body: Body): Promise<void>;
  /** The columns a PATCH sets, from the body and the locked current row. Default: the body. */
  toUpdate?(ctx: WriteContext, body: Body, current: Row): Promise<Row> | Row;
  /** After a PATCH or DELETE changed the row, in its transaction (status history). */
  afterChange?(ctx: WriteContext, before: Row, after: Row): Promise<void>;
}

/** What a write did, as its finishers see it inside the transaction. */
export interface WrittenRecord {
  resource: ResourceDescriptor;
  action: 'create' | 'update' | 'delete';
  id: string;
  tenant: Tenant;
  /** The record as the API answers with it (create: with `createIncludes`); the stored row on delete. */
  record: Row;
}

/** Runs inside the write's transaction after the write and its read-back, just before the commit. */
export type InTransactionFinisher = (trx: Db, written: WrittenRecord) => Promise<void>;

export interface WriteOptions {
  /** Field errors the schema validation found (Ajv through `toFieldErrors`). */
  schemaErrors?: FieldError[];
  now?: () => number;
  /** In order, inside the transaction; a throw rolls the whole write back. */
  finishers?: readonly InTransactionFinisher[];
}

async function finish(trx: Db, options: WriteOptions, written: WrittenRecord): Promise<void> {
  for (const finisher of options.finishers ?? []) await finisher(trx, written);
}

const notFoundReference = (field: string): FieldError => ({
  field,
  code: 'not_found',
  message: 'Registro não encontrado nesta conta.',
});

function writeOf(d: ResourceDescriptor): WriteDescriptor {
  if (!d.write) throw errors.internal(new Error(`${d.name} has no write section`));
  return d.write;
}

function tenantOf(tenant: Tenant | null): Tenant {
  if (!tenant) throw errors.internal(new Error('write without a tenant: route is missing its guard config'));
  return tenant;
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
    const found = await scoped(db, table, tenant).select('id').where('id', '=', value).executeTakeFirst();
    if (!found) out.push(notFoundReference(field));
  }
  return out;
}

async function refuseInvalid(db: Db, w: WriteDescriptor, tenant: Tenant, raw: unknown, current: Row | undefined, options: WriteOptions) {
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

const isSqlFragment = (value: unknown): value is RawBuilder<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { toOperationNode?: unknown }).toOperationNode === 'function';

async function readBack(db: Db, d: ResourceDescriptor, tenant: Tenant, id: string, include: readonly string[] = []): Promise<Row> {
  const query = include.length > 0 ? { include: include.join(',') } : {};
  return (await getRecord(db, d, tenant, id, query)).data;
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
  const tenant = tenantOf(tenantOrNull);
  await refuseInvalid(db, w, tenant, body, undefined, options);
  return db.transaction().execute(async (trx) => {
    const ctx: WriteContext = { trx, tenant, now: options.now ?? Date.now };
    const values = w.rules?.toInsert ? await w.rules.toInsert(ctx, body) : { ...body };
    const row = (await trx
      .insertInto(d.table)
      .values({ ...columnValues(d, values), team_id: tenant.teamId, mode: tenant.mode })
      .returningAll()
      .executeTakeFirstOrThrow()) as Row;
    await w.rules?.afterInsert?.(ctx, row, body);
    const id = String(row.id);
    const record = await readBack(trx, d, tenant, id, w.createIncludes);
    await finish(trx, options, { resource: d, action: 'create', id, tenant, record });
    return record;
  });
}

/** The row to change, locked for the rest of the transaction; 404 when the tenant has no such record. */
async function lockRow(trx: Db, d: ResourceDescriptor, tenant: Tenant, id: string): Promise<Row> {
  const row = await scoped(trx, d.table, tenant, d.where).selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
  if (!row) throw errors.notFound();
  return row as Row;
}

async function applyChange(ctx: WriteContext, d: ResourceDescriptor, before: Row, values: Row): Promise<Row> {
  const after = (await ctx.trx
    .updateTable(d.table)
    .set({ ...columnValues(d, values), updated_at: sql`now()` })
    .where('id', '=', before.id)
    .where('team_id', '=', ctx.tenant.teamId)
    .where('mode', '=', ctx.tenant.mode)
    .returningAll()
    .executeTakeFirstOrThrow()) as Row;
  await writeOf(d).rules?.afterChange?.(ctx, before, after);
  return after;
}

/** Locks the tenant's row for one transaction, applies what `decide` returns, reads the result back
 *  (update) and runs the finishers; 404 outside the tenant. Resolves to the record as answered. */
async function changeRow(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  options: WriteOptions,
  action: 'update' | 'delete',
  decide: (ctx: WriteContext, current: Row) => Promise<Row>,
): Promise<Row> {
  const tenant = tenantOf(tenantOrNull);
  if (!isUuid(id)) throw errors.notFound();
  return db.transaction().execute(async (trx) => {
    const ctx: WriteContext = { trx, tenant, now: options.now ?? Date.now };
    const current = await lockRow(trx, d, tenant, id);
    const after = await applyChange(ctx, d, current, await decide(ctx, current));
    const record = action === 'update' ? await readBack(trx, d, tenant, id) : after;
    await finish(trx, options, { resource: d, action, id, tenant, record });
    return record;
  });
}

/** PATCH: 404 for a record outside the tenant, 422 with every refused field, or the updated record. */
export async function updateRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  body: Body,
  options: WriteOptions = {},
): Promise<Row> {
  const w = writeOf(d);
  return changeRow(db, d, tenantOrNull, id, options, 'update', async (ctx, current) => {
    await refuseInvalid(ctx.trx, w, ctx.tenant, body, current, options);
    return w.rules?.toUpdate ? w.rules.toUpdate(ctx, body, current) : { ...body };
  });
}

/** DELETE: the soft delete of the descriptor (the record is kept); 404 outside the tenant. */
export async function deleteRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  id: string,
  options: WriteOptions = {},
): Promise<void> {
  const { softDelete } = writeOf(d);
  await changeRow(db, d, tenantOrNull, id, options, 'delete', async () => ({ ...softDelete }));
}
