// The webhook endpoint routes: create, list, get, update, delete, rotate the secret, and list
// the delivery attempts. Scopes `webhooks:write` / `webhooks:read`; URLs are checked for SSRF.
// Registered on the typed routes, so params, bodies and queries are typed from their schemas.
import { requireTenant } from '../infra/db/tenancy/tenancy.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { errors, type FieldError } from '../errors/app-error.ts';
import { toFieldErrors } from '../http/body-validation.ts';
import { itemEnvelope, itemEnvelopeSchema, listEnvelope, listEnvelopeSchema } from '../http/envelope.ts';
import { createIdempotencyHooks } from '../http/idempotency.ts';
import { type TypedApp, typedRoutes } from '../http/typed-routes.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { IdempotencyStore } from '../infra/idempotency-store.ts';
import { MAX_LIMIT } from '../query/plan.ts';
import { idParamsSchema } from '../query/schemas.ts';
import { urlRefusal } from './address-safety.ts';
import { listAttempts } from './attempt-list.ts';
import { registerWebhookOperationRoutes } from './operation-routes.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  unknownKeyIds,
  updateEndpoint,
} from './endpoint-repository.ts';
import {
  createWebhookEndpointBody,
  MAX_ENDPOINTS,
  updateWebhookEndpointBody,
  webhookAttemptRow,
  webhookEndpointRow,
  webhookEndpointWithSecret,
} from './endpoint-schema.ts';

const tags = ['Webhook endpoints'];
const read = { resource: 'webhooks', access: 'read' } as const;
const write = { resource: 'webhooks', access: 'write' } as const;
const writeBody = { attachValidation: true } as const;

const deliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_LIMIT, default: 20, description: `Page size, 1..${MAX_LIMIT}.` }),
    ),
    cursor: Type.Optional(Type.String({ description: '`pagination.next_cursor` of the previous page.' })),
    'filter[status][eq]': Type.Optional(
      Type.String({ enum: ['succeeded', 'retrying', 'failed'], description: "Filter: the attempt's `status`." }),
    ),
    'filter[status][in]': Type.Optional(Type.String({ description: 'Filter: `status` one of a comma list (`retrying,failed`).' })),
    'filter[event_type][eq]': Type.Optional(Type.String({ description: 'Filter: the event type (`sale.created`).' })),
    'filter[event_type][in]': Type.Optional(Type.String({ description: 'Filter: the event type one of a comma list.' })),
  },
  { additionalProperties: true },
);

interface RouteDeps {
  db: Db;
  config: Config;
  hooks: ReturnType<typeof createIdempotencyHooks>;
}

/** The body's `url` if it has one: the body is not yet known to match its schema (validation attached). */
function bodyUrl(body: unknown): unknown {
  return typeof body === 'object' && body !== null && 'url' in body ? body.url : undefined;
}

/** Ajv's refusals and the URL's, as one 422. */
async function refuseInvalid(request: FastifyRequest, config: Config, db: Db): Promise<void> {
  const failure = request.validationError;
  const found: FieldError[] = failure?.validation && failure.validationContext === 'body' ? toFieldErrors(failure.validation) : [];
  const url = bodyUrl(request.body);
  if (typeof url === 'string' && !found.some((e) => e.field === 'url')) {
    const reason = await urlRefusal(url, config.webhookAllowPrivate);
    if (reason) found.push({ field: 'url', code: 'url_not_allowed', message: `URL recusada: ${reason}.` });
  }
  const keys = bodyKeyIds(request.body);
  if (keys && !found.some((e) => e.field.startsWith('excluded_key_ids')) && request.tenant) {
    const unknown = new Set(await unknownKeyIds(db, request.tenant, keys));
    keys.forEach((id, i) => {
      if (unknown.has(id.toLowerCase()))
        found.push({ field: `excluded_key_ids[${i}]`, code: 'not_found', message: 'Chave de API não encontrada nesta conta.' });
    });
  }
  if (found.length > 0) throw errors.bodyInvalid(found);
}

/** The body's `excluded_key_ids` when it is a list of strings (its schema refuses anything else). */
function bodyKeyIds(body: unknown): string[] | undefined {
  const ids = typeof body === 'object' && body !== null && 'excluded_key_ids' in body ? body.excluded_key_ids : undefined;
  return Array.isArray(ids) && ids.every((id) => typeof id === 'string') ? ids : undefined;
}

function registerCreate(app: TypedApp, { db, config, hooks }: RouteDeps): void {
  app.post(
    '/v1/webhook-endpoints',
    {
      ...writeBody,
      config: { operationId: 'webhook-endpoints.create', ...write },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'webhook-endpoints.create',
        summary: 'Create a webhook endpoint',
        description: `At most ${MAX_ENDPOINTS} endpoints per account and mode. The answer carries the signing \`secret\`, shown once.`,
        tags,
        body: createWebhookEndpointBody,
        response: { 201: itemEnvelopeSchema(webhookEndpointWithSecret) },
      },
    },
    async (request, reply) => {
      await refuseInvalid(request, config, db);
      const created = await createEndpoint(db, requireTenant(request.tenant, 'write'), request.body, hooks.beforeCommit(request));
      return reply.code(201).send(itemEnvelope(request, created));
    },
  );
}

function registerList(app: TypedApp, { db }: RouteDeps): void {
  app.get(
    '/v1/webhook-endpoints',
    {
      config: { operationId: 'webhook-endpoints.list', ...read },
      schema: {
        operationId: 'webhook-endpoints.list',
        summary: 'List webhook endpoints',
        description: `Every endpoint of the account in this mode (at most ${MAX_ENDPOINTS}, one page), oldest first.`,
        tags,
        response: { 200: listEnvelopeSchema(webhookEndpointRow) },
      },
    },
    async (request) => {
      const data = await listEndpoints(db, requireTenant(request.tenant, 'read'));
      return listEnvelope(request, data, { next_cursor: null, has_more: false, limit: MAX_ENDPOINTS });
    },
  );
}

function registerGet(app: TypedApp, { db }: RouteDeps): void {
  app.get(
    '/v1/webhook-endpoints/:id',
    {
      config: { operationId: 'webhook-endpoints.get', ...read },
      schema: {
        operationId: 'webhook-endpoints.get',
        summary: 'Get a webhook endpoint',
        tags,
        params: idParamsSchema,
        response: { 200: itemEnvelopeSchema(webhookEndpointRow) },
      },
    },
    async (request) => itemEnvelope(request, await getEndpoint(db, requireTenant(request.tenant, 'read'), request.params.id)),
  );
}

function registerUpdate(app: TypedApp, { db, config }: RouteDeps): void {
  app.patch(
    '/v1/webhook-endpoints/:id',
    {
      ...writeBody,
      config: { operationId: 'webhook-endpoints.update', ...write },
      schema: {
        operationId: 'webhook-endpoints.update',
        summary: 'Update a webhook endpoint',
        description: 'Only the fields sent change. `enabled: true` re-enables an endpoint the service disabled.',
        tags,
        params: idParamsSchema,
        body: updateWebhookEndpointBody,
        response: { 200: itemEnvelopeSchema(webhookEndpointRow) },
      },
    },
    async (request) => {
      const tenant = requireTenant(request.tenant, 'write');
      const { id } = request.params;
      // An unknown endpoint answers 404 before its body is judged.
      await getEndpoint(db, tenant, id);
      await refuseInvalid(request, config, db);
      return itemEnvelope(request, await updateEndpoint(db, tenant, id, request.body));
    },
  );
}

function registerDelete(app: TypedApp, { db }: RouteDeps): void {
  app.delete(
    '/v1/webhook-endpoints/:id',
    {
      config: { operationId: 'webhook-endpoints.delete', ...write },
      schema: {
        operationId: 'webhook-endpoints.delete',
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint with its pending deliveries and its attempts.',
        tags,
        params: idParamsSchema,
        response: { 204: Type.Null({ description: 'No body.' }) },
      },
    },
    async (request, reply) => {
      await deleteEndpoint(db, requireTenant(request.tenant, 'write'), request.params.id);
      return reply.code(204).send(null);
    },
  );
}

function registerRotateSecret(app: TypedApp, { db, hooks }: RouteDeps): void {
  app.post(
    '/v1/webhook-endpoints/:id/rotate-secret',
    {
      config: { operationId: 'webhook-endpoints.rotate-secret', ...write },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'webhook-endpoints.rotate-secret',
        summary: 'Rotate the signing secret',
        description: 'Answers the new `secret`, shown once. The previous secret keeps signing for 24 hours, so both verify meanwhile.',
        tags,
        params: idParamsSchema,
        response: { 200: itemEnvelopeSchema(webhookEndpointWithSecret) },
      },
    },
    async (request) =>
      itemEnvelope(request, await rotateSecret(db, requireTenant(request.tenant, 'write'), request.params.id, hooks.beforeCommit(request))),
  );
}

function registerDeliveries(app: TypedApp, { db }: RouteDeps): void {
  app.get(
    '/v1/webhook-endpoints/:id/deliveries',
    {
      config: { operationId: 'webhook-endpoints.deliveries', ...read },
      schema: {
        operationId: 'webhook-endpoints.deliveries',
        summary: 'List the delivery attempts of an endpoint',
        description:
          'Newest first: event, delivery, attempt number, time, response status or error, duration and the next attempt. ' +
          'Filters: `filter[status][eq|in]` and `filter[event_type][eq|in]`.',
        tags,
        params: idParamsSchema,
        querystring: deliveriesQuery,
        response: { 200: listEnvelopeSchema(webhookAttemptRow) },
      },
    },
    async (request) => {
      const { data, pagination } = await listAttempts(db, requireTenant(request.tenant, 'read'), request.params.id, request.query);
      return listEnvelope(request, data, pagination);
    },
  );
}

export function registerWebhookEndpointRoutes(app: FastifyInstance, db: Db, config: Config): void {
  const deps: RouteDeps = { db, config, hooks: createIdempotencyHooks(new IdempotencyStore(db)) };
  const typed = typedRoutes(app);
  // In this order: it is the order of the OpenAPI description.
  for (const register of [
    registerCreate,
    registerList,
    registerGet,
    registerUpdate,
    registerDelete,
    registerRotateSecret,
    registerDeliveries,
  ]) {
    register(typed, deps);
  }
  registerWebhookOperationRoutes(app, deps);
}
