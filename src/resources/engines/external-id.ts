// External ids (issue 49, docs/sync.md): the integrator's own id of a customer, sale,
// supplier or expense. One per record, unique per account, mode and resource for ever (migrations/011): a write
// that would give a second record the same one is a 409 `external_id_conflict` naming the record that has it.
// Every write that sets one takes a transaction lock on (tenant, resource, external id) before it looks: two
// writers of the same external id queue, and the second sees the first's record, so the upsert creates once and
// a conflict is found by a read, not by a failed statement. The unique index stays the last word against writers
// that take no lock (an import).
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import { AppError } from '../../errors/app-error.ts';
import { hasSqlState, violatedConstraint } from '../../errors/database-errors.ts';
import { SQLSTATE } from '../../errors/sqlstate.ts';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { selectScoped } from '../../infra/db/tenancy/tenancy.ts';
import { F } from '../../schemas/common.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const EXTERNAL_ID_MAX_LENGTH = 100;
/** Any character but the control characters (Unicode Cc: U+0000–U+001F, U+007F–U+009F). */
export const EXTERNAL_ID_PATTERN = '^[^\\u0000-\\u001F\\u007F-\\u009F]*$';

/** The resources that carry `external_id` (and answer `PUT /v1/<name>/by-external-id/{external_id}`). */
export const EXTERNAL_ID_RESOURCES: ReadonlySet<string> = new Set(['customers', 'sales', 'suppliers', 'expenses']);

export const hasExternalIds = (d: Pick<ResourceDescriptor, 'name'>): boolean => EXTERNAL_ID_RESOURCES.has(d.name);

const EXTERNAL_ID_DOC =
  'Your own id of this record (1 to 100 characters, no control characters), compared exactly. Unique per account, mode and ' +
  'resource: a write that would give it to a second record answers 409 `external_id_conflict`. `null` clears it.';

/** The field as the API answers it. */
export const externalIdField = () => F.textOrNull({ description: EXTERNAL_ID_DOC, examples: ['pedido-10482'] });

/** The one schema of a valid external id (a path's, a body's). */
export const externalIdText = (opts: { description?: string; examples?: unknown[] } = {}) =>
  Type.String({ minLength: 1, maxLength: EXTERNAL_ID_MAX_LENGTH, pattern: EXTERNAL_ID_PATTERN, ...opts });

/** The field as POST and PATCH bodies take it. Its example is in the description's field examples, so it shows in
 *  the complete body examples but not in the usual ones (two creations from them would take one external id twice). */
export const externalIdInput = () => Type.Union([externalIdText(), Type.Null()], { description: EXTERNAL_ID_DOC });

/** Whether `value` is a valid external id (the path of an upsert). */
export function isExternalId(value: string): boolean {
  return value.length > 0 && [...value].length <= EXTERNAL_ID_MAX_LENGTH && new RegExp(EXTERNAL_ID_PATTERN, 'u').test(value);
}

export const externalIdConflict = (existingId: string | undefined) =>
  new AppError('external_id_conflict', {
    detail: 'Another record of this resource already has this external_id; nothing was written.',
    extensions: existingId ? { existing_id: existingId } : undefined,
  });

/** Queues this transaction behind any other writing `externalId` for the same tenant and resource, until it ends. */
export async function lockExternalId(trx: Db, d: ResourceDescriptor, tenant: Tenant, externalId: string): Promise<void> {
  const key = `external_id:${tenant.accountId}:${tenant.mode}:${d.table}:${externalId}`;
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
}

/** The id of the tenant's record of `d` with this external id (as the unique index sees them: the resource's rows). */
export async function recordWithExternalId(db: Db, d: ResourceDescriptor, tenant: Tenant, externalId: string): Promise<string | undefined> {
  const row = (await selectScoped(db, d.table, tenant, d.where).select('id').where('external_id', '=', externalId).executeTakeFirst()) as
    | { id: string }
    | undefined;
  return row ? String(row.id) : undefined;
}

/**
 * Before a write gives `externalId` to the record `ownId` (undefined: a new record): locks it, and refuses with 409
 * when another record has it.
 */
export async function claimExternalId(
  trx: Db,
  d: ResourceDescriptor,
  tenant: Tenant,
  externalId: string,
  ownId: string | undefined,
): Promise<void> {
  await lockExternalId(trx, d, tenant, externalId);
  const holder = await recordWithExternalId(trx, d, tenant, externalId);
  if (holder !== undefined && holder !== ownId) throw externalIdConflict(holder);
}

/** Whether a database failure is the external-id unique index of `d`'s table refusing a second record. */
export function isExternalIdViolation(d: ResourceDescriptor, err: unknown): boolean {
  return hasSqlState(err, SQLSTATE.uniqueViolation) && violatedConstraint(err).startsWith(`${d.table}_external_id_key`);
}
