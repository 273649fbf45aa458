// Shapes of webhook endpoints and their delivery attempts (TypeBox: validation, types, OpenAPI).
import { type Static, Type } from '@sinclair/typebox';
import { EVENT_PATTERNS } from '../events/event-types.ts';
import { NO_NUL_PATTERN, TEXT_BOUNDS } from '../schemas/bounds.ts';
import { F } from '../schemas/common.ts';

export const MAX_ENDPOINTS = 16;

const enabledEvents = Type.Array(Type.String({ enum: [...EVENT_PATTERNS], maxLength: Math.max(...EVENT_PATTERNS.map((p) => p.length)) }), {
  minItems: 1,
  maxItems: EVENT_PATTERNS.length,
  uniqueItems: true,
  description: 'Event types to deliver: `customer.created`, `sale.*` (every sale event) or `*` (all).',
});
const url = Type.String({
  minLength: 1,
  maxLength: TEXT_BOUNDS.webhook_endpoints.url,
  pattern: NO_NUL_PATTERN,
  description: 'https:// URL resolving to a public address.',
  examples: ['https://erp.example.com/webhooks/balcao'],
});
const description = Type.Union([
  Type.String({ pattern: NO_NUL_PATTERN, maxLength: TEXT_BOUNDS.webhook_endpoints.description }),
  Type.Null(),
]);

export const MAX_EXCLUDED_KEYS = 10;

const excludedKeyIds = Type.Array(Type.String({ format: 'uuid', maxLength: 36 }), {
  maxItems: MAX_EXCLUDED_KEYS,
  uniqueItems: true,
  description:
    `Up to ${MAX_EXCLUDED_KEYS} ids of this account's API keys (\`key_id\` of \`GET /v1/me\`): the events written through them are not ` +
    'delivered to this endpoint (an integration is not sent its own writes back). Empty: every event is.',
  // EXAMPLE_IDS.apiKey of openapi/field-examples.ts (a layer above): the examples test sends it as its own key's id.
  examples: [['5d1c2b3a-4e5f-4a6b-9c7d-8e9f0a1b2c3d']],
});

export const webhookEndpointRow = Type.Object(
  {
    id: F.uuid(),
    url: F.text(),
    description: F.textOrNull(),
    enabled_events: Type.Array(Type.String()),
    excluded_key_ids: Type.Array(Type.String({ format: 'uuid' }), {
      description: 'The API keys whose events this endpoint is not sent (`excluded_key_ids` of the create and update bodies).',
    }),
    enabled: F.boolean(),
    disabled_reason: F.textOrNull({ description: 'Why the service disabled the endpoint (every delivery failing for 5 days).' }),
    created_at: F.timestamp(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'WebhookEndpoint' },
);

export const webhookEndpointWithSecret = Type.Object(
  {
    ...webhookEndpointRow.properties,
    secret: Type.String({
      description: 'Signing secret (`whsec_` + base64), shown only in this response. After a rotation the old one signs for 24 hours too.',
    }),
  },
  { title: 'WebhookEndpointWithSecret' },
);

export const createWebhookEndpointBody = Type.Object(
  {
    url,
    enabled_events: Type.Optional({ ...enabledEvents, default: ['*'] }),
    excluded_key_ids: Type.Optional({ ...excludedKeyIds, default: [] }),
    description: Type.Optional(description),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { title: 'CreateWebhookEndpointInput' },
);

export const updateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(url),
    enabled_events: Type.Optional(enabledEvents),
    excluded_key_ids: Type.Optional(excludedKeyIds),
    description: Type.Optional(description),
    enabled: Type.Optional(Type.Boolean({ description: 'true re-enables an endpoint the service disabled.' })),
  },
  { title: 'UpdateWebhookEndpointInput' },
);

export const webhookAttemptRow = Type.Object(
  {
    id: F.uuid(),
    delivery_id: Object.assign(F.uuid(), {
      description: 'The delivery (one event to this endpoint) this attempt belongs to: what `…/retry` takes.',
    }),
    event_id: F.uuid(),
    event_type: F.text(),
    attempt_number: F.integer(),
    created_at: F.timestamp(),
    status: Type.String({ enum: ['succeeded', 'retrying', 'failed'], description: 'What this attempt led to.' }),
    response_status: F.integerOrNull(),
    error: F.textOrNull({ description: '`timeout`, `connection_refused`, `address_not_allowed`, … when no status came back.' }),
    response_body: F.textOrNull({ description: 'The first 1 kB of the answer.' }),
    duration_ms: F.integer(),
    next_attempt_at: F.timestampOrNull(),
  },
  { title: 'WebhookAttempt' },
);
export type WebhookAttempt = Static<typeof webhookAttemptRow>;

/** `POST …/test`: the one attempt of the signed `ping` the endpoint was sent, as it went. */
export const webhookTestResult = Type.Object(
  {
    status: Type.String({ enum: ['succeeded', 'failed'], description: '`succeeded` when the endpoint answered a 2xx in time.' }),
    response_status: F.integerOrNull(),
    error: F.textOrNull({ description: '`timeout`, `connection_refused`, `address_not_allowed`, … when no status came back.' }),
    duration_ms: F.integer(),
  },
  { title: 'WebhookTestResult' },
);

export const deliveryParamsSchema = Type.Object({
  id: Type.String({ format: 'uuid', maxLength: 36, description: 'Endpoint id; anything else is a 404.' }),
  delivery_id: Type.String({
    format: 'uuid',
    maxLength: 36,
    description: "The `delivery_id` of an entry of the deliveries list (the entry's own `id` is accepted too); anything else is a 404.",
  }),
});

/** `POST …/retry`: the delivery queued again (named by its id or by one of its attempts). */
export const webhookRetryResult = Type.Object(
  { delivery_id: Object.assign(F.uuid(), { description: 'The delivery queued again.' }) },
  { title: 'WebhookRetryResult' },
);

/** The longest cursor the query language accepts (src/query/cursor.ts). */
const MAX_CURSOR_LENGTH = 2048;

export const replayWebhookBody = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_CURSOR_LENGTH,
        pattern: '^[A-Za-z0-9_-]+={0,2}$',
        description: 'A forward cursor of `GET /v1/events` (`sort=created_at`): the events after it are sent.',
      }),
    ),
    since: Type.Optional(
      Type.String({ format: 'date-time', maxLength: 35, description: 'The events created at or after this time are sent.' }),
    ),
  },
  {
    title: 'ReplayWebhookInput',
    description: 'Exactly one of `after` and `since`.',
    examples: [{ since: '2026-11-20T00:00:00Z' }],
  },
);

export const MAX_REPLAYED = 10_000;

export const webhookReplayResult = Type.Object(
  {
    queued: F.integer(),
    has_more: Type.Boolean({ description: `More events follow the ${MAX_REPLAYED} queued: call again with \`after\` = \`next_cursor\`.` }),
    next_cursor: F.textOrNull({
      description: 'With `has_more`: the forward cursor of `GET /v1/events` after the last event queued. Null otherwise.',
    }),
  },
  { title: 'WebhookReplayResult' },
);

/** The body of a test ping (`POST …/test`): shaped as an event, of type `ping`, about the endpoint itself. */
export const pingEventSchema = Type.Object(
  {
    id: F.uuid(),
    type: Type.Literal('ping'),
    created_at: F.timestamp(),
    data: Type.Object(
      {
        object: Type.Object({ endpoint_id: F.uuid() }, { additionalProperties: false }),
        previous_attributes: Type.Null(),
      },
      { additionalProperties: false },
    ),
    request_id: F.text({ description: 'The `X-Request-Id` of the test request.' }),
  },
  { title: 'PingEvent' },
);
export type PingEvent = Static<typeof pingEventSchema>;
