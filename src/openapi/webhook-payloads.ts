// OpenAPI 3.1 top-level `webhooks`: one entry per event type, the POST a subscribed endpoint
// receives (the event object with its record, and the Standard Webhooks headers).
import { Type } from '@sinclair/typebox';
import { eventDataSchema, eventRow } from '../events/event-schema.ts';
import { EVENT_ACTIONS, EVENT_RESOURCES } from '../events/event-types.ts';
import { eventObjectOf } from '../resources/descriptor.ts';
import { resourceByName } from '../resources/registry.ts';
import { F } from '../schemas/common.ts';
import { pingEventSchema } from '../webhooks/endpoint-schema.ts';

type Json = Record<string, any>;

const HEADERS: Json = {
  'webhook-id': {
    description: 'The event id: the same on every retry (use it to drop duplicates).',
    schema: { type: 'string', format: 'uuid' },
  },
  'webhook-timestamp': { description: 'Unix seconds when this attempt was signed.', schema: { type: 'string' } },
  'webhook-signature': {
    description: 'Space-separated `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per valid secret (Standard Webhooks).',
    schema: { type: 'string' },
  },
};

export function webhookPayloads(): Json {
  const out: Json = {};
  for (const resource of EVENT_RESOURCES) {
    const d = resourceByName(resource);
    if (!d) continue;
    const object = eventObjectOf(d);
    for (const action of EVENT_ACTIONS) {
      const type = `${object}.${action}`;
      const title = `${object.charAt(0).toUpperCase()}${object.slice(1)}${action.charAt(0).toUpperCase()}${action.slice(1)}Event`;
      const schema = Type.Object(
        {
          id: F.uuid(),
          type: Type.Literal(type),
          created_at: F.timestamp(),
          data: eventDataSchema(d.row),
          request_id: F.textOrNull(),
          origin: eventRow.properties.origin,
        },
        { title },
      );
      out[type] = {
        post: {
          operationId: `webhooks.${type}`,
          summary: `${type}: ${action === 'updated' ? 'a record changed' : action === 'created' ? 'a record was created' : 'a record was deleted'}`,
          description:
            'Sent to every enabled endpoint subscribed to this type, for a change made through the API or by any other writer ' +
            '(`origin`). Any 2xx within 10 s acknowledges it; anything else is retried. ' +
            'Delivery is at least once and order is not guaranteed.',
          tags: ['Webhook endpoints'],
          parameters: Object.entries(HEADERS).map(([name, h]) => ({ name, in: 'header', required: true, ...h })),
          requestBody: { required: true, content: { 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } } },
          responses: { '200': { description: 'Any 2xx acknowledges the event.' } },
          security: [],
        },
      };
    }
  }
  out.ping = {
    post: {
      operationId: 'webhooks.ping',
      summary: 'ping: the test of `POST /v1/webhook-endpoints/{id}/test`',
      description: 'Sent only when asked for, signed like every delivery; not an event of the feed, never retried.',
      tags: ['Webhook endpoints'],
      parameters: Object.entries(HEADERS).map(([name, h]) => ({ name, in: 'header', required: true, ...h })),
      requestBody: { required: true, content: { 'application/json': { schema: JSON.parse(JSON.stringify(pingEventSchema)) } } },
      responses: { '200': { description: 'Any 2xx: the test succeeded.' } },
      security: [],
    },
  };
  return out;
}
