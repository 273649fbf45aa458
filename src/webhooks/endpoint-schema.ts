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

export const webhookEndpointRow = Type.Object(
  {
    id: F.uuid(),
    url: F.text(),
    description: F.textOrNull(),
    enabled_events: Type.Array(Type.String()),
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
    description: Type.Optional(description),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { title: 'CreateWebhookEndpointInput' },
);

export const updateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(url),
    enabled_events: Type.Optional(enabledEvents),
    description: Type.Optional(description),
    enabled: Type.Optional(Type.Boolean({ description: 'true re-enables an endpoint the service disabled.' })),
  },
  { title: 'UpdateWebhookEndpointInput' },
);

export const webhookAttemptRow = Type.Object(
  {
    id: F.uuid(),
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
