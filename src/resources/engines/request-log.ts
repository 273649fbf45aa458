// The write log (issue 28): GET /v1/requests lists the writes a key made that committed, over the last
// 24 hours, so a client that lost a response learns whether its write happened and which record it made.
// An entry is one INSERT in the write's own transaction, inside its event's statement when it has one (no extra
// round trip or statement; the write and its entry commit or vanish together); the list goes through the list engine like any resource, with the
// key and the retention added to the plan as conditions the client cannot name or lift.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { type AuthContext, boundTenant, tenantValues } from '../../domain/tenant.ts';
import { listEnvelope, listEnvelopeSchema } from '../../http/envelope.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import type { SqlShape } from '../../infra/db/statements/sql-shape.ts';
import { columnsScopedSql, keyTenantSql, valuesScopedSql } from '../../infra/db/tenancy/tenancy.ts';
import type { QueryableResource } from '../../query/contract.ts';
import type { FilterPlan } from '../../query/plan.ts';
import { documentedRecord, listQuerySchema, sparseSchema } from '../../query/schemas.ts';
import { F } from '../../schemas/common.ts';
import { listRecords } from './read-engine.ts';
import type { WrittenRecord } from './write-engine.ts';

/** How long entries are listed and kept (then purged). */
export const RETENTION_MS = 24 * 60 * 60 * 1000;
/** Expired entries are deleted at most this often per process, on the way of a list. */
const PURGE_EVERY_MS = 10 * 60 * 1000;

export const requestLogRow = Type.Object(
  {
    id: F.uuid(),
    request_id: F.text({ description: 'The X-Request-Id of the write: the client\u2019s own when it sent one.' }),
    created_at: F.timestamp(),
    method: Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH'), Type.Literal('DELETE')], {
      'x-balcao-type': 'text',
    }),
    path: F.text({ description: 'The path written (for a batch operation, the operation\u2019s path).', examples: ['/v1/sales'] }),
    status: F.integer(),
    idempotency_key: F.textOrNull({ description: 'The Idempotency-Key sent (a batch operation: the batch\u2019s).' }),
    resource: F.text({ examples: ['sales'] }),
    resource_id: F.uuidOrNull(),
  },
  { title: 'RequestLogEntry' },
);

/** An entry as answered: the contract's eight fields; the row's id only orders the pages (cursor ties). */
const { id: _id, ...answered } = requestLogRow.properties;
export const RequestLogEntrySchema = Type.Object(answered, { title: 'RequestLogEntry' });

export const requestLog: QueryableResource = {
  name: 'requests',
  table: 'request_log',
  row: requestLogRow,
  filters: {
    request_id: ['eq'],
    idempotency_key: ['eq'],
    resource: ['eq', 'in'],
    created_at: ['gt', 'gte', 'lt', 'lte'],
  },
  sorts: ['created_at'],
};

/** What the route knows of a write besides the record: who, how, and the answer's status. */
export interface WriteRequest {
  apiKeyId: string;
  requestId: string;
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  status: number;
  idempotencyKey: string | null;
}

/** The INSERT of a write's entry, a CTE of the write's tail (write-engine.ts). */
export function logEntryShape(written: WrittenRecord, request: WriteRequest): SqlShape {
  return {
    key: 'request log entry',
    values: [
      ...tenantValues(written.tenant),
      request.apiKeyId,
      request.requestId,
      request.method,
      request.path,
      request.status,
      request.idempotencyKey,
      written.descriptor.name,
      written.id,
    ],
    build: logEntrySql,
  };
}

const logEntrySql = (values: readonly unknown[]) => {
  const [, , apiKeyId, requestId, method, path, status, idempotencyKey, resource, id] = values;
  return sql`
    INSERT INTO request_log (${columnsScopedSql(['id', 'api_key_id', 'request_id', 'method', 'path', 'status', 'idempotency_key', 'resource', 'resource_id'])})
    VALUES (${valuesScopedSql(boundTenant(values))}, gen_random_uuid(), ${apiKeyId}, ${requestId}, ${method},
      ${path}, ${status}, ${idempotencyKey}, ${resource}, ${id})`;
};

let nextPurge = 0;

/** Deletes expired entries (all tenants); returns how many. It walks each key's entries in the log's keyset index
 *  (team_id, mode, api_key_id, created_at, id), key by key: so no index on created_at alone is kept up by every
 *  write for the purge's sake (migration 008). Keys are never deleted, only revoked. */
export async function purgeRequestLog(db: Db): Promise<number> {
  const result = await sql`
    DELETE FROM request_log r USING api_keys k
    WHERE ${keyTenantSql('r', 'k')} AND r.api_key_id = k.id
      AND r.created_at < now() - interval '24 hours'`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

const lists = { whole: listEnvelopeSchema(RequestLogEntrySchema), sparse: listEnvelopeSchema(sparseSchema(RequestLogEntrySchema)) };

export function registerRequestLogRoute(app: FastifyInstance, deps: { database: { db: Db }; now?: () => number }): void {
  const { db } = deps.database;
  const now = deps.now ?? Date.now;
  app.get(
    '/v1/requests',
    {
      config: { operationId: 'requests.list' },
      schema: {
        operationId: 'requests.list',
        summary: 'List the writes this key made that committed (last 24 hours)',
        description:
          'Every 2xx POST, PATCH and DELETE of the calling key (each operation of a batch included), newest first, for 24 hours. ' +
          'Another key, account or mode never sees them. `request_id` is the X-Request-Id of the write (the client\u2019s own when it ' +
          'sent one): a client that lost a response finds here whether the write committed, and which record it made. An empty ' +
          'list means nothing committed. No scope is needed; it counts as a read.',
        tags: ['Requests'],
        querystring: listQuerySchema(requestLog),
        response: { 200: listEnvelopeSchema(documentedRecord(RequestLogEntrySchema)) },
      },
    },
    async (request, reply) => {
      const auth = request.auth as AuthContext;
      const at = now();
      if (at >= nextPurge) {
        nextPurge = at + PURGE_EVERY_MS;
        // Housekeeping off the request's path: the list hides expired entries anyway.
        purgeRequestLog(db).catch((err: unknown) => request.log.error({ err }, 'write log purge failed'));
      }
      const own: FilterPlan[] = [
        { field: 'api_key_id', kind: 'uuid', op: 'eq', value: auth.keyId },
        { field: 'created_at', kind: 'timestamp', op: 'gt', value: at - RETENTION_MS },
      ];
      const result = await listRecords(db, requestLog, request.tenant, request.query, own);
      // One plain serializer per reply (whole, or all-optional with `fields`), as the resources' lists do.
      reply
        .serializer(reply.compileSerializationSchema(result.sparse ? lists.sparse : lists.whole, '200'))
        .type('application/json; charset=utf-8');
      return listEnvelope(request, result.data, result.pagination);
    },
  );
}
