// The operations on a webhook endpoint beyond its record: a signed test `ping` sent at once, one delivery sent
// again, and the replay of the feed from a point. Scope `webhooks:write`; every message goes out through the
// same address checks as a delivery (src/webhooks/post-webhook.ts). Retry and replay answer 202: they queue,
// the delivery worker sends.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { errors } from '../errors/app-error.ts';
import { toFieldErrors } from '../http/body-validation.ts';
import { itemEnvelope, itemEnvelopeSchema } from '../http/envelope.ts';
import type { createIdempotencyHooks } from '../http/idempotency.ts';
import { typedRoutes } from '../http/typed-routes.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { requireTenant } from '../infra/db/tenancy/tenancy.ts';
import { idParamsSchema } from '../query/schemas.ts';
import { DELIVERIES_CHANNEL } from '../events/channels.ts';
import {
  deliveryParamsSchema,
  MAX_REPLAYED,
  replayWebhookBody,
  webhookReplayResult,
  webhookRetryResult,
  webhookTestResult,
} from './endpoint-schema.ts';
import { pingEndpoint } from './ping.ts';
import { replayEvents, replayFrom, retryDelivery, wakeDeliveryWorkers } from './redelivery.ts';

const tags = ['Webhook endpoints'];
const write = { resource: 'webhooks', access: 'write' } as const;

export interface OperationDeps {
  db: Db;
  config: Config;
  hooks: ReturnType<typeof createIdempotencyHooks>;
}

export function registerWebhookOperationRoutes(app: FastifyInstance, { db, config, hooks }: OperationDeps): void {
  const typed = typedRoutes(app);
  const wake = (log: { warn: (o: object, m: string) => void }) =>
    // A lost wake-up only delays the attempt to the worker's next look (30 s at most).
    wakeDeliveryWorkers(db, DELIVERIES_CHANNEL).catch((err: unknown) => log.warn({ err }, 'webhook wake-up (NOTIFY) not sent'));

  typed.post(
    '/v1/webhook-endpoints/:id/test',
    {
      config: { operationId: 'webhook-endpoints.test', ...write },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'webhook-endpoints.test',
        summary: 'Send a test ping to the endpoint',
        description:
          'Sends a signed event of type `ping` (`data.object.endpoint_id`) to the endpoint now, and answers with that attempt. ' +
          'The ping is not an event of the feed and is not listed among the deliveries.',
        tags,
        params: idParamsSchema,
        response: { 200: itemEnvelopeSchema(webhookTestResult) },
      },
    },
    async (request) =>
      itemEnvelope(
        request,
        await pingEndpoint(db, requireTenant(request.tenant, 'write'), request.params.id, request.id, config, request.server.tracing),
      ),
  );

  typed.post(
    '/v1/webhook-endpoints/:id/deliveries/:delivery_id/retry',
    {
      config: { operationId: 'webhook-endpoints.retry-delivery', ...write },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'webhook-endpoints.retry-delivery',
        summary: 'Send a delivery again',
        description:
          'Sends the delivery again soon, whatever its status, with the same `webhook-id` (the event id). ' +
          'The attempt is one more in the deliveries list.',
        tags,
        params: deliveryParamsSchema,
        response: { 202: itemEnvelopeSchema(webhookRetryResult) },
      },
    },
    async (request, reply) => {
      const deliveryId = await retryDelivery(db, requireTenant(request.tenant, 'write'), request.params.id, request.params.delivery_id);
      await wake(request.log);
      return reply.code(202).send(itemEnvelope(request, { delivery_id: deliveryId }));
    },
  );

  typed.post(
    '/v1/webhook-endpoints/:id/replay',
    {
      attachValidation: true,
      config: { operationId: 'webhook-endpoints.replay', ...write },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'webhook-endpoints.replay',
        summary: 'Replay the events after a point of the feed',
        description:
          'Queues for this endpoint every retained event after `after` (a forward cursor of `GET /v1/events`) or since `since`, ' +
          `that the endpoint subscribes to, in feed order: at most ${MAX_REPLAYED} per call (\`has_more\`, then \`after\` = \`next_cursor\`). ` +
          'An event already delivered is sent again with the same `webhook-id`.',
        tags,
        params: idParamsSchema,
        body: replayWebhookBody,
        response: { 202: itemEnvelopeSchema(webhookReplayResult) },
      },
    },
    async (request, reply) => {
      const failure = request.validationError;
      if (failure?.validation && failure.validationContext === 'body') throw errors.bodyInvalid(toFieldErrors(failure.validation));
      const result = await replayEvents(db, requireTenant(request.tenant, 'write'), request.params.id, replayFrom(request.body));
      if (result.queued > 0) await wake(request.log);
      return reply.code(202).send(itemEnvelope(request, result));
    },
  );
}
