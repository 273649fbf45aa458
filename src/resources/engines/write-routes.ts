// Registers the write endpoints (POST, PATCH, DELETE) of every writable descriptor. Auth, scope,
// module and rate limit come from each route's config through the pipeline; POST routes add the
// Idempotency-Key hooks; bodies are validated by the write validator and merged into one 422.
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { createQueryId, PostgresQueryCompiler } from 'kysely';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FieldError } from '../../errors/app-error.ts';
import { toFieldErrors } from '../../http/body-validation.ts';
import { itemEnvelope, itemEnvelopeSchema } from '../../http/envelope.ts';
import { type BatchOperationContext, batchOperationOf } from '../../http/batch-context.ts';
import {
  createIdempotencyHooks,
  IDEMPOTENCY_HEADER,
  type IdempotencyHooks,
  JSON_CONTENT_TYPE,
  type ReplayHeaders,
} from '../../http/idempotency.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { settledSerialization } from '../../infra/db/statements/send-ahead.ts';
import { IdempotencyStore, type IdempotencyStoreOptions } from '../../infra/idempotency-store.ts';
import { idParamsSchema } from '../../query/schemas.ts';
import { type TypedApp, typedRoutes } from '../../http/typed-routes.ts';
import { type ResourceDescriptor, type Row, resourceTag, type WriteDescriptor, writableOf } from '../descriptor.ts';
import { RESOURCES } from '../registry.ts';
import { isSqlFragment } from './insert-statement.ts';
import { etagOf } from './etag.ts';
import { logEntryShape, type WriteRequest } from './request-log.ts';
import { externalIdText, hasExternalIds } from './external-id.ts';
import { upsertRecord } from './upsert.ts';
import { createRecord, deleteRecord, updateRecord, type WriteOptions, type WriteParts, type WrittenBeside } from './write-engine.ts';
import { commitPositionOf } from '../../http/read-your-writes.ts';

/** The resources that accept writes: those of the registry with a `write` section, in its order. */
export const WRITABLE: readonly ResourceDescriptor[] = writableOf(RESOURCES);

export interface WriteRouteDeps {
  database: { db: Db };
  /** Clock for generated numbers (expense_number); defaults to Date.now. */
  now?: () => number;
  idempotency?: IdempotencyStoreOptions;
  /** The resources served (default: the registry); those with a `write` section get write routes. */
  resources?: readonly ResourceDescriptor[];
  /** The uniform parts each write sends with its change (its origin mark for the change feed, and `besides`: the write
   *  log's entry, the Idempotency-Key's record), per key and request id (events/write-origin.ts). */
  recordWrite: (keyId: string | null, requestId: string, besides?: readonly WrittenBeside[]) => WriteParts;
}

const IDEMPOTENCY_DOC =
  'Optional `Idempotency-Key` header (1..255 characters): the first response is kept 24 hours per API key and replayed, with ' +
  '`Idempotent-Replay: true`, for the same method, path and body; another body gives 409 `idempotency_conflict`. A request ' +
  'sent while the first with its key is still writing waits for that write and replays it; one that meets a key still held ' +
  'otherwise gets 409 `idempotency_conflict` with `Retry-After: 1`.';

const CONDITIONAL_DOC =
  'Optional `If-Match` (an `ETag` from a read or a write of this record, a list of them, or `*`): when the record is no longer at ' +
  'that version the answer is 412 `precondition_failed` and nothing is written; the comparison and the write are atomic.';

/** A soft-delete value as the prose shows it: JSON, or the SQL text of a fragment (`now()`). */
function shown(value: unknown): string {
  if (isSqlFragment(value)) return new PostgresQueryCompiler().compileQuery(value.toOperationNode(), createQueryId()).sql;
  return JSON.stringify(value);
}

/** The record a POST answers with: the row plus the includes it always carries (sale items). */
function createdSchema(d: ResourceDescriptor, w: WriteDescriptor): TObject {
  const properties: Record<string, TSchema> = { ...d.row.properties };
  for (const name of w.createIncludes ?? []) {
    const inc = d.includes?.[name];
    if (!inc) throw new Error(`${d.name}: createIncludes names unknown include ${name}`);
    properties[name] = inc.cardinality === 'many' ? Type.Array(inc.item) : Type.Union([inc.item, Type.Null()]);
  }
  return Type.Object(properties, { title: d.row.title });
}

/** Ajv's refusals of this body (attached, not thrown, so the rules' errors join them in one 422). */
function schemaErrors(request: FastifyRequest): FieldError[] {
  const failure = request.validationError as (Error & { validation?: unknown[]; validationContext?: string }) | undefined;
  if (!failure?.validation || failure.validationContext !== 'body') return [];
  return toFieldErrors(failure.validation as Parameters<typeof toFieldErrors>[0]);
}

/** What the three write routes of one resource share. */
interface ResourceRoutes {
  app: TypedApp;
  deps: WriteRouteDeps;
  d: ResourceDescriptor;
  w: WriteDescriptor;
  db: Db;
  tags: string[];
  guard: {
    resource: ResourceDescriptor['name'];
    access: 'write';
    module: ResourceDescriptor['module'];
    deprecated: ResourceDescriptor['deprecated'];
  };
}

function registerResource(app: TypedApp, deps: WriteRouteDeps, hooks: RouteHooks, d: ResourceDescriptor) {
  const w = d.write;
  if (!w) return;
  const guard = { resource: d.name, access: 'write', module: d.module, deprecated: d.deprecated } as const;
  const routes: ResourceRoutes = { app, deps, d, w, db: deps.database.db, tags: [resourceTag(d)], guard };
  registerCreate(routes, hooks.create);
  if (hasExternalIds(d)) registerUpsert(routes, hooks.upsert);
  registerUpdate(routes);
  registerDelete(routes);
}

/** The Idempotency-Key hooks of creations, and of upserts (whose replays carry their own headers). */
interface RouteHooks {
  create: IdempotencyHooks;
  upsert: IdempotencyHooks;
}

export const UPSERT_HEADER = 'balcao-upsert';

const UPSERT_DOC =
  'Creates the record with this external id, or updates the one that has it: the body is the POST body of the resource ' +
  "(an `external_id` in it must equal the path's, else 422). With no such record it is created exactly as POST creates " +
  'it: 201, `Location`, `Balcao-Upsert: created`. Otherwise the body is applied as a PATCH of that record with the same ' +
  "body applies it (fields PATCH does not take, such as a sale's items, are ignored): 200 and `Balcao-Upsert: updated`, or " +
  '`Balcao-Upsert: unchanged` when it would change nothing; then nothing is written, no event is emitted, and `updated_at` ' +
  'and the `ETag` stay. Concurrent upserts of one new external id create one record: the others answer 200. Percent-encode ' +
  'the external id in the path. `If-Match` works as on PATCH (with no record, it fails with 412); an `Idempotency-Key` as on ' +
  'POST (a replay carries `Idempotent-Replay: true`, and its status and body; `Balcao-Upsert` only on a replayed 201).';

const externalIdParams = Type.Object({
  external_id: externalIdText({ description: 'The external id, percent-encoded.', examples: ['pedido-10482'] }),
});

function registerUpsert({ app, deps, d, w, db, tags, guard }: ResourceRoutes, hooks: IdempotencyHooks) {
  app.put(
    `/v1/${d.name}/by-external-id/:external_id`,
    {
      ...common,
      config: { operationId: `${d.name}.upsert`, ...guard },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: `${d.name}.upsert`,
        summary: `Create or update a record of ${d.name} by its external id`,
        description: `${UPSERT_DOC}\n\n${CONDITIONAL_DOC}`,
        tags,
        params: externalIdParams,
        body: w.create,
        response: {
          200: itemEnvelopeSchema(d.row),
          201: itemEnvelopeSchema(createdSchema(d, w)),
        },
      },
    },
    async (request, reply) => {
      const batch = batchOperationOf(request);
      const result = await upsertRecord(db, d, request.tenant, request.params.external_id, request.body, {
        schemaErrors: schemaErrors(request),
        now: deps.now,
        ifMatch: request.headers['if-match'],
        parts: (status) => partsFor(deps, request, status),
        beforeCommit: hooks.beforeCommit(request),
        commitPosition: commitPositionOf(request),
        batch: batch?.tx ? { tx: batch.tx, afterCommit: batch.afterCommit } : undefined,
      });
      reply.header('etag', result.etag).header(UPSERT_HEADER, result.outcome);
      if (result.outcome === 'created') reply.code(201).header('location', `/v1/${d.name}/${String(result.data.id)}`);
      return itemEnvelope(request, result.data);
    },
  );
}

/** A replayed upsert: a 201 carries what the creation was sent with (its ETag, Location, `Balcao-Upsert: created`). */
function upsertReplayHeaders(d: ResourceDescriptor): ReplayHeaders {
  return (status, body) => {
    const tag = creationTag(status, body);
    if (!tag?.etag) return undefined;
    const id = (JSON.parse(body) as { data: { id: string } }).data.id;
    return { ...tag, location: `/v1/${d.name}/${id}`, [UPSERT_HEADER]: 'created' };
  };
}

/** Bodies are validated by the write engine, which merges Ajv's refusals with its own into one 422. */
const common = { attachValidation: true } as const;

function registerCreate({ app, deps, d, w, db, tags, guard }: ResourceRoutes, hooks: IdempotencyHooks) {
  app.post(
    `/v1/${d.name}`,
    {
      ...common,
      config: { operationId: `${d.name}.create`, ...guard },
      preValidation: hooks.readKey,
      onSend: hooks.record,
      schema: {
        operationId: `${d.name}.create`,
        summary: `Create a record of ${d.name}`,
        description: IDEMPOTENCY_DOC,
        tags,
        body: w.create,
        response: { 201: itemEnvelopeSchema(createdSchema(d, w)) },
      },
    },
    async (request, reply) => {
      // The body is serialized once, inside the write's transaction when an Idempotency-Key is held, so the
      // stored response is byte for byte the one sent, and commits with the write.
      reply.code(201);
      const respond = memoize((record: Row) => reply.serialize(itemEnvelope(request, record)) as string);
      const batch = batchOperationOf(request);
      // The key's record (or its claim's response) is a part of the write's tail, like its log entry.
      const data = await hooks.createOnce(request, reply, 201, respond, (key) =>
        createRecord(db, d, request.tenant, request.body, {
          schemaErrors: schemaErrors(request),
          now: deps.now,
          ...transactionOf(request, batch),
          parts: partsFor(deps, request, 201, key.beside),
        }),
      );
      if (data === undefined) return reply; // a replay, already sent
      // Already serialized (a held Idempotency-Key stores these very bytes): sent as text, past the typed serializer.
      // A new record has not changed yet: its version is its id (updated_at is still null).
      const untyped: FastifyReply = reply;
      return untyped.header('etag', etagOf(data.id, null)).type(JSON_CONTENT_TYPE).send(respond(data));
    },
  );
}

function registerUpdate({ app, deps, d, w, db, tags, guard }: ResourceRoutes) {
  app.patch(
    `/v1/${d.name}/:id`,
    {
      ...common,
      config: { operationId: `${d.name}.update`, ...guard },
      schema: {
        operationId: `${d.name}.update`,
        summary: `Update a record of ${d.name}`,
        description: `Only the fields sent change; fields the body schema does not name are ignored. ${CONDITIONAL_DOC}`,
        tags,
        params: idParamsSchema,
        body: w.update,
        response: { 200: itemEnvelopeSchema(d.row) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const batch = batchOperationOf(request);
      const { data, etag } = await updateRecord(db, d, request.tenant, id, request.body, {
        schemaErrors: schemaErrors(request),
        now: deps.now,
        ...transactionOf(request, batch),
        parts: partsFor(deps, request, 200),
        ifMatch: request.headers['if-match'],
      });
      reply.header('etag', etag);
      return itemEnvelope(request, data);
    },
  );
}

function registerDelete({ app, deps, d, w, db, tags, guard }: ResourceRoutes) {
  app.delete(
    `/v1/${d.name}/:id`,
    {
      ...common,
      config: { operationId: `${d.name}.delete`, ...guard },
      schema: {
        operationId: `${d.name}.delete`,
        summary: w.deleteSummary ?? `Deactivate a record of ${d.name}`,
        description: `Sets ${Object.entries(w.softDelete)
          .map(([k, v]) => `\`${k}\` to \`${shown(v)}\``)
          .join(', ')}; the record is kept. Answers 204 every time, with the new version's \`ETag\`. ${CONDITIONAL_DOC}`,
        tags,
        params: idParamsSchema,
        response: { 204: Type.Null({ description: 'No body.' }) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const batch = batchOperationOf(request);
      const { etag } = await deleteRecord(db, d, request.tenant, id, {
        now: deps.now,
        ...transactionOf(request, batch),
        parts: partsFor(deps, request, 204),
        ifMatch: request.headers['if-match'],
      });
      return reply.code(204).header('etag', etag).send(null);
    },
  );
}

/** A write's transaction: its own, noting its commit position in the request's; or, for an atomic batch's operation,
 *  the batch's, which takes its after-commit work. */
const transactionOf = (
  request: FastifyRequest,
  batch: BatchOperationContext | undefined,
): Pick<WriteOptions, 'transaction' | 'afterCommit' | 'commitPosition'> =>
  batch?.tx ? { transaction: batch.tx, afterCommit: batch.afterCommit } : { commitPosition: commitPositionOf(request) };

/** The uniform parts a write sends with its change: its origin mark, its entry in the write log, and its key's part. */
function partsFor(deps: WriteRouteDeps, request: FastifyRequest, status: number, keyBeside?: WrittenBeside): WriteParts {
  const auth = request.auth;
  const besides = keyBeside ? [keyBeside] : [];
  if (!auth) return deps.recordWrite(null, request.id, besides);
  const batch = batchOperationOf(request);
  const header = request.headers[IDEMPOTENCY_HEADER];
  const entry: WriteRequest = {
    apiKeyId: auth.keyId,
    requestId: request.id,
    method: request.method as WriteRequest['method'],
    path: request.url.split('?', 1)[0] as string,
    status,
    // The key only means something on POST and PUT (SPEC 8: ignored on PATCH and DELETE); a batch's covers its operations.
    idempotencyKey: batch ? batch.idempotencyKey : takesKey(request.method) && typeof header === 'string' ? header : null,
  };
  return deps.recordWrite(auth.keyId, request.id, [(written) => ({ shape: logEntryShape(written, entry) }), ...besides]);
}

/** A replayed creation carries the ETag it was first sent with: the new record's (its id alone, see etag.ts). */
function creationTag(status: number, body: string): Record<string, string> | undefined {
  if (status !== 201) return undefined;
  try {
    const id = (JSON.parse(body) as { data?: { id?: unknown } }).data?.id;
    return typeof id === 'string' ? { etag: etagOf(id, null) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The last answer of `fn`, reused while it is asked about the same record. A creation's stored response is
 * serialized while its record still carries placeholders; the answer sent after the commit is that text with
 * the settled values in place of the tokens, not a second serialization.
 */
function memoize(fn: (record: Row) => string): (record: Row) => string {
  let last: { record: Row; text: string } | undefined;
  return (record) => {
    if (last?.record !== record) last = { record, text: (last && settledSerialization(last.text, last.record, record)) ?? fn(record) };
    return last.text;
  };
}

export function registerWriteRoutes(app: FastifyInstance, deps: WriteRouteDeps): void {
  const store = new IdempotencyStore(deps.database.db, deps.idempotency);
  const create = createIdempotencyHooks(store, creationTag);
  for (const d of deps.resources ? writableOf(deps.resources) : WRITABLE) {
    const upsert = createIdempotencyHooks(store, upsertReplayHeaders(d));
    registerResource(typedRoutes(app), deps, { create, upsert }, d);
  }
}

/** The methods whose Idempotency-Key the server keeps (creations and upserts). */
const takesKey = (method: string): boolean => method === 'POST' || method === 'PUT';
