// Webhooks: the endpoint operations (create, test ping, retry, replay, deliveries) and the verification of a
// delivery's Standard Webhooks signature, which answers the typed event.
import { Webhook } from 'standardwebhooks';
import type { components } from './generated/balcao-api.js';
import { everyPage, type Item, type ListParams, type Page, type ReplayWebhookInput, type WriteOptions } from './resources.js';
import type { CreateWebhookEndpointInput, UpdateWebhookEndpointInput } from './resources.js';
import type { Transport } from './transport.js';

type Schemas = components['schemas'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type WebhookAttempt = Schemas['WebhookAttempt'];
export type WebhookTestResult = Schemas['WebhookTestResult'];
export type WebhookReplayResult = Schemas['WebhookReplayResult'];
export type Event = Schemas['Event'];
/** What a delivery carries: an event of the feed, or the ping of a test. */
export type WebhookEvent = Event | Schemas['PingEvent'];

export function webhookEndpoints(t: Transport) {
  const path = '/v1/webhook-endpoints';
  const item = (id: string) => `${path}/${encodeURIComponent(id)}`;
  const deliveries = async (id: string, params?: ListParams) =>
    (await t.request<Page<WebhookAttempt>>('GET', `${item(id)}/deliveries`, { query: params as never })).data;
  return {
    create: async (body: CreateWebhookEndpointInput, options: WriteOptions = {}) =>
      (await t.request<Item<WebhookEndpointWithSecret>>('POST', path, { body, idempotencyKey: options.idempotencyKey })).data.data,
    list: async () => (await t.request<Page<WebhookEndpoint>>('GET', path)).data,
    get: async (id: string) => (await t.request<Item<WebhookEndpoint>>('GET', item(id))).data.data,
    update: async (id: string, body: UpdateWebhookEndpointInput) =>
      (await t.request<Item<WebhookEndpoint>>('PATCH', item(id), { body })).data.data,
    delete: async (id: string) => {
      await t.request('DELETE', item(id));
    },
    rotateSecret: async (id: string) => (await t.request<Item<WebhookEndpointWithSecret>>('POST', `${item(id)}/rotate-secret`)).data.data,
    /** Sends a signed `ping` now; answers that attempt. */
    test: async (id: string) => (await t.request<Item<WebhookTestResult>>('POST', `${item(id)}/test`)).data.data,
    /** Sends a delivery again soon, with the same `webhook-id`. */
    retryDelivery: async (id: string, deliveryId: string) =>
      (await t.request<Item<{ delivery_id: string }>>('POST', `${item(id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`)).data.data,
    /** Queues the events after a feed cursor (`{after}`) or a time (`{since}`); at most 10 000 per call. */
    replay: async (id: string, from: ReplayWebhookInput) =>
      (await t.request<Item<WebhookReplayResult>>('POST', `${item(id)}/replay`, { body: from })).data.data,
    deliveries,
    allDeliveries: (id: string, params?: Omit<ListParams, 'cursor'>) => everyPage((cursor) => deliveries(id, { ...params, cursor })),
  };
}

/** Header values as Node's `IncomingHttpHeaders`, a fetch `Headers`, or a plain record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Verifies a delivery (its raw body, exactly as received, and its `webhook-*` headers) against the endpoint's
 * secret, and answers the event. Throws when the signature or the timestamp (5 minutes of tolerance) is wrong.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const read = (name: string): string => {
    const value = headers instanceof Headers ? headers.get(name) : headers[name];
    return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
  };
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const signed = {
    'webhook-id': read('webhook-id'),
    'webhook-timestamp': read('webhook-timestamp'),
    'webhook-signature': read('webhook-signature'),
  };
  return new Webhook(secret).verify(body, signed) as WebhookEvent;
}
