// `PUT /v1/<resource>/by-external-id/{external_id}` (issue 49): create the record with this external id as POST
// would, or apply the body to it as PATCH would, through the write engine's own create and update. The lookup and
// the write run in one transaction under the external id's lock (external-id.ts): of concurrent upserts of one new
// external id, the first creates and the others, queued behind it, find its record. A body that would change
// nothing writes nothing (no UPDATE: no event, updated_at and the ETag stay).
import { AppError, errors, type FieldError } from '../../errors/app-error.ts';
import type { Tenant } from '../../domain/tenant.ts';
import { mergeFieldErrors } from '../../http/body-validation.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { requireTenant } from '../../infra/db/tenancy/tenancy.ts';
import type { Body, ResourceDescriptor, Row } from '../descriptor.ts';
import { etagOf } from './etag.ts';
import { externalIdConflict, isExternalId, lockExternalId, recordWithExternalId } from './external-id.ts';
import { type AfterCommit, createRecord, refuseInvalid, updateRecord, type WriteOptions, type WriteParts } from './write-engine.ts';
import type { CommitPosition } from '../../infra/db/statements/commit-lsn.ts';
import { type WriteTransaction, writeTransaction } from '../../infra/db/statements/write-transaction.ts';

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

export interface UpsertResult {
  outcome: UpsertOutcome;
  /** Created: the record as POST answers it (a sale with its items); else as PATCH answers it. */
  data: Row;
  etag: string;
}

export interface UpsertOptions {
  schemaErrors?: FieldError[];
  now?: () => number;
  ifMatch?: string | string[];
  /** The write's uniform parts (its origin mark, its write log entry) for the outcome's status: 201 created, 200 otherwise. */
  parts: (status: 200 | 201) => WriteParts;
  /** Runs last inside the upsert's own transaction (the Idempotency-Key's claim marks itself committed). */
  beforeCommit?: (trx: Db) => Promise<void>;
  /** Where the upsert's own transaction notes its commit position. */
  commitPosition?: CommitPosition | undefined;
  /** An atomic batch's transaction, and where its after-commit work goes: the upsert runs in it. */
  batch?: { tx: WriteTransaction; afterCommit?: ((work: AfterCommit) => void) | undefined };
}

const mismatch = (): FieldError => ({
  field: 'external_id',
  code: 'external_id_mismatch',
  message: 'O external_id do corpo deve ser igual ao do caminho.',
});

/** The body as PATCH takes it: the fields its schema names (a sale's items, say, are for the creation only). */
function patchBody(d: ResourceDescriptor, body: Body): Body {
  const names = new Set(Object.keys(d.write?.update.properties ?? {}));
  return Object.fromEntries(Object.entries(body).filter(([field]) => names.has(field)));
}

export async function upsertRecord(
  db: Db,
  d: ResourceDescriptor,
  tenantOrNull: Tenant | null,
  externalId: string,
  raw: unknown,
  options: UpsertOptions,
): Promise<UpsertResult> {
  const w = d.write;
  if (!w) throw errors.internal(new Error(`${d.name} has no write section`));
  const tenant = requireTenant(tenantOrNull, 'write');
  if (!isExternalId(externalId)) throw errors.queryInvalid('external_id_invalid');
  const given: Body = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Body) : {};
  const refused = 'external_id' in given && given.external_id !== externalId ? [mismatch()] : [];
  const body: Body = { ...given, external_id: externalId };
  // The body is the POST body whatever the outcome: refused as POST would refuse it.
  const schemaErrors = mergeFieldErrors(options.schemaErrors ?? [], refused);
  const inBatch = options.batch;
  const works: AfterCommit[] = [];
  const afterCommit = inBatch ? inBatch.afterCommit : (work: AfterCommit) => works.push(work);
  const run = async (tx: WriteTransaction): Promise<UpsertResult> => {
    const trx = tx.db;
    const base: WriteOptions = { now: options.now, transaction: tx, afterCommit };
    await refuseInvalid(trx, w, tenant, body, undefined, { schemaErrors });
    await lockExternalId(trx, d, tenant, externalId);
    const id = await recordWithExternalId(trx, d, tenant, externalId);
    if (id === undefined) {
      // If-Match names a version of a record; with no record, no version holds (RFC 9110 13.1.1).
      if (options.ifMatch !== undefined) throw errors.preconditionFailed();
      const data = await createRecord(trx, d, tenant, body, { ...base, parts: options.parts(201) });
      return { outcome: 'created', data, etag: etagOf(data.id, null) };
    }
    const { data, etag, unchanged } = await updateRecord(trx, d, tenant, id, patchBody(d, body), {
      ...base,
      parts: options.parts(200),
      ifMatch: options.ifMatch,
      skipUnchanged: true,
    });
    return { outcome: unchanged ? 'unchanged' : 'updated', data, etag };
  };

  if (inBatch) return run(inBatch.tx);
  const result = await writeTransaction(db, { commitPosition: options.commitPosition }, async (tx) => {
    const done = await run(tx);
    await options.beforeCommit?.(tx.db);
    return done;
  }).catch(async (err: unknown) => {
    // Refused by the unique index (a writer that took no lock, an import): named once the transaction is over.
    if (err instanceof AppError && err.code === 'external_id_conflict' && !err.extensions)
      throw externalIdConflict(await recordWithExternalId(db, d, tenant, externalId));
    throw err;
  });
  for (const work of works) work();
  return result;
}
