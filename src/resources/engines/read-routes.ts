// Registers the read endpoints of every descriptor (GET list, digest, GET by id) and GET /v1/deals/stages.
// Auth, scope, module and rate limit come from each route's config through the pipeline.
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type TypedApp, typedRoutes } from '../../http/typed-routes.ts';
import { itemEnvelope, itemEnvelopeSchema, listEnvelope, listEnvelopeSchema } from '../../http/envelope.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { type ReadRunner, type ReadRouter, readRunner } from '../../infra/db/replicas/read-router.ts';
import { documentedRecord, idParamsSchema, itemQuerySchema, listQuerySchema, recordSchema, sparseSchema } from '../../query/schemas.ts';
import { dealStageRow, deals, dealStages, listDealStages } from '../descriptors/deals.ts';
import { type ResourceDescriptor, resourceTag } from '../descriptor.ts';
import { digestEnvelopeSchema, digestQuerySchema, digestRecords } from './digest.ts';
import { getRecord, listRecords } from './read-engine.ts';
import { noneMatchHits } from './etag.ts';
import { RESOURCES } from '../registry.ts';

export interface ReadRouteDeps {
  database: { db: Db; reads?: ReadRouter };
  /** The resources served (default: the registry). */
  resources?: readonly ResourceDescriptor[];
}

/**
 * Routes document a record as `anyOf [whole, projection]`, which fast-json-stringify would resolve
 * by validating every value; each reply instead uses one of two plain serializers, compiled on
 * first use and cached by Fastify per route (never per request).
 */
function serializeWith(reply: FastifyReply, schema: TSchema): void {
  reply.serializer(reply.compileSerializationSchema(schema, '200')).type('application/json; charset=utf-8');
}

const NOT_MODIFIED = Type.Null({ description: 'Not Modified: the version named in `If-None-Match` is current. No body; `ETag` is sent.' });

function registerResource(app: TypedApp, read: ReadRunner, d: ResourceDescriptor): void {
  const guard = { resource: d.name, access: 'read', module: d.module, deprecated: d.deprecated } as const;
  const tags = [resourceTag(d)];
  const record = recordSchema(d);
  // A list record may carry includes too: the same shape as GET by id.
  const list = { whole: listEnvelopeSchema(record), sparse: listEnvelopeSchema(sparseSchema(record)) };
  const listQuery = listQuerySchema(d);
  const item = { whole: itemEnvelopeSchema(record), sparse: itemEnvelopeSchema(sparseSchema(record)) };

  app.get(
    `/v1/${d.name}`,
    {
      config: { operationId: `${d.name}.list`, ...guard },
      schema: {
        operationId: `${d.name}.list`,
        summary: `List ${d.name.replace('-', ' ')}`,
        tags,
        querystring: listQuery,
        response: { 200: listEnvelopeSchema(documentedRecord(record)) },
      },
    },
    async (request, reply) => {
      const result = await read(request.auth?.keyId, (db) => listRecords(db, d, request.tenant, request.query));
      serializeWith(reply, result.sparse ? list.sparse : list.whole);
      return listEnvelope(request, result.data, result.pagination);
    },
  );

  // A static segment: Fastify's router matches it before `/:id`, in whatever order the routes are added.
  app.get(
    `/v1/${d.name}/digest`,
    {
      config: { operationId: `${d.name}.digest`, ...guard },
      schema: {
        operationId: `${d.name}.digest`,
        summary: `Digest of ${d.name.replace('-', ' ')}, to check a copy`,
        description:
          'One level of a tree of SHA-256 digests over the records matching the filters, split by the first characters of their id. ' +
          'Compare each entry with the same figures computed over your copy and ask again, with that entry\u2019s `prefix`, only where they differ. ' +
          'Counts as one read. See the API guide, \u201cDigests\u201d.',
        tags,
        querystring: digestQuerySchema(d, listQuery),
        response: { 200: digestEnvelopeSchema },
      },
    },
    async (request) => {
      const { prefix, entries } = await read(request.auth?.keyId, (db) => digestRecords(db, d, request.tenant, request.query));
      return { data: entries, meta: { request_id: request.id, prefix } };
    },
  );

  app.get(
    `/v1/${d.name}/:id`,
    {
      config: { operationId: `${d.name}.get`, ...guard },
      schema: {
        operationId: `${d.name}.get`,
        summary: `Get one record of ${d.name.replace('-', ' ')}`,
        tags,
        params: idParamsSchema,
        querystring: itemQuerySchema(d),
        description:
          'Carries a strong `ETag` naming the record version. With `If-None-Match` holding it (or a list holding it, or `*`) the answer is `304 Not Modified` with no body.',
        response: { 200: itemEnvelopeSchema(documentedRecord(record)), 304: NOT_MODIFIED },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const noneMatch = request.headers['if-none-match'];
      const isCurrent = (etag: string) => noneMatchHits(noneMatch, etag);
      const result = await read(request.auth?.keyId, (db) => getRecord(db, d, request.tenant, id, request.query, isCurrent));
      reply.header('etag', result.etag);
      // The client's copy is current: no body (the read was counted like any other). Sent undefined, not null: Fastify
      // serializes a null to `null` and announces its Content-Length of 4, a body the 304 does not carry, and a client
      // that trusts the length (wrk's HTTP parser) waits for those 4 bytes on a kept-alive connection.
      if ('notModified' in result) return reply.code(304).send(undefined as unknown as null);
      serializeWith(reply, result.sparse ? item.sparse : item.whole);
      return itemEnvelope(request, result.data);
    },
  );
}

export function registerReadRoutes(app: FastifyInstance, deps: ReadRouteDeps): void {
  // Lists and gets go where the read router sends them (a replica, or the primary): read-router.ts.
  const read = readRunner(deps.database);
  app.get(
    '/v1/deals/stages',
    {
      config: { operationId: 'deals.stages', resource: 'deals', access: 'read', module: deals.module },
      schema: {
        operationId: 'deals.stages',
        summary: 'List the deal funnel stages',
        description: `Every stage, ordered by position ascending (at most ${dealStages.max}); no pagination, filters, sort or fields.`,
        tags: [resourceTag(deals)],
        response: { 200: itemEnvelopeSchema(Type.Array(dealStageRow, { maxItems: dealStages.max })) },
      },
    },
    async (request) => itemEnvelope(request, await read(request.auth?.keyId, (db) => listDealStages(db, request.tenant))),
  );
  for (const d of deps.resources ?? RESOURCES) registerResource(typedRoutes(app), read, d);
}
