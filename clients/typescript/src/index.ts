// @balcao/client: the official TypeScript client of the Balcão API. Types are generated from the committed
// description (openapi/v1.json, by `npm run openapi:check`); everything runs on the platform's fetch.
import type { components } from './generated/balcao-api.js';
import {
  type CreateCustomerInput,
  type CreateExpenseInput,
  type CreateSaleInput,
  type CreateSupplierInput,
  type Customer,
  type Expense,
  everyPage,
  type Item,
  type ListParams,
  type Page,
  readOnly,
  type Sale,
  type Supplier,
  type UpdateCustomerInput,
  type UpdateExpenseInput,
  type UpdateSaleInput,
  type UpdateSupplierInput,
  upsertable,
} from './resources.js';
import { type ClientOptions, Transport } from './transport.js';
import { type Event, webhookEndpoints } from './webhooks.js';

type Schemas = components['schemas'];

export { BalcaoError, type FieldError, type Problem } from './errors.js';
export type { components, paths } from './generated/balcao-api.js';
export * from './resources.js';
export type { ClientOptions, Filter, QueryValue } from './transport.js';
export { verifyWebhook, type WebhookEvent, type WebhookHeaders } from './webhooks.js';
export type * from './webhooks.js';

export type Me = Schemas['Me'];
export type BatchResponse = Schemas['BatchResponse'];
export type BatchOperation = Schemas['BatchOperation'];

export interface FollowOptions {
  /** Seconds the server holds an empty page (1..30). Default 30. */
  wait?: number;
  /** Events per page (1..100). Default 100. */
  limit?: number;
  /** Stops following (between pages, or during a held request). */
  signal?: AbortSignal;
}

/** Called with each page of events and the cursor after it; store the cursor once the page is processed.
 *  Return `false` to stop. */
export type OnEvents = (events: Event[], cursor: string) => unknown;

export function createClient(options: ClientOptions) {
  const t = new Transport(options);
  const listEvents = async (params?: ListParams) => (await t.request<Page<Event>>('GET', '/v1/events', { query: params as never })).data;
  return {
    customers: upsertable<Customer, CreateCustomerInput, UpdateCustomerInput>(t, '/v1/customers'),
    sales: upsertable<Sale, CreateSaleInput, UpdateSaleInput>(t, '/v1/sales'),
    suppliers: upsertable<Supplier, CreateSupplierInput, UpdateSupplierInput>(t, '/v1/suppliers'),
    expenses: upsertable<Expense, CreateExpenseInput, UpdateExpenseInput>(t, '/v1/expenses'),
    appointments: readOnly<Schemas['Appointment']>(t, '/v1/appointments'),
    services: readOnly<Schemas['Service']>(t, '/v1/services'),
    products: readOnly<Schemas['Product']>(t, '/v1/products'),
    inventory: readOnly<Schemas['InventoryItem']>(t, '/v1/inventory'),
    bankAccounts: readOnly<Schemas['BankAccount']>(t, '/v1/bank-accounts'),
    deals: {
      ...readOnly<Schemas['Deal']>(t, '/v1/deals'),
      stages: async () => (await t.request<Item<Schemas['DealStage'][]>>('GET', '/v1/deals/stages')).data.data,
    },
    webhookEndpoints: webhookEndpoints(t),
    events: {
      list: listEvents,
      all: (params?: Omit<ListParams, 'cursor'>) => everyPage((cursor) => listEvents({ ...params, cursor })),
      get: async (id: string) => (await t.request<Item<Event>>('GET', `/v1/events/${encodeURIComponent(id)}`)).data.data,
      /**
       * Follows the feed forward from `cursor` (undefined: from the oldest retained event) with the long poll:
       * each page goes to `onPage` with the cursor after it, and an empty page is held by the server until an
       * event arrives. Resumable: start again from the last cursor `onPage` was given. Answers that cursor when
       * `onPage` returns false or the signal aborts.
       */
      async follow(cursor: string | undefined, onPage: OnEvents, follow: FollowOptions = {}): Promise<string | undefined> {
        let at = cursor;
        while (!follow.signal?.aborted) {
          const page = await t
            .request<Page<Event>>('GET', '/v1/events', {
              query: { sort: 'created_at', limit: follow.limit ?? 100, wait: follow.wait ?? 30, cursor: at },
              signal: follow.signal,
            })
            .catch((err: unknown) => {
              if (follow.signal?.aborted) return undefined;
              throw err;
            });
          if (!page) break;
          // Sorted forward, every page carries the cursor after it, an empty one included.
          at = page.data.pagination.next_cursor ?? at;
          if (page.data.data.length > 0 && (await onPage(page.data.data, at as string)) === false) break;
        }
        return at;
      },
    },
    /** Up to 100 writes in one call, each answered as the single request would be; `atomic`: all or none. */
    batch: async (operations: BatchOperation[], batch: { atomic?: boolean; idempotencyKey?: string } = {}) =>
      (
        await t.request<BatchResponse>('POST', '/v1/batch', {
          body: { operations, atomic: batch.atomic ?? false },
          idempotencyKey: batch.idempotencyKey,
        })
      ).data,
    me: async () => (await t.request<Item<Me>>('GET', '/v1/me')).data.data,
  };
}

export type BalcaoClient = ReturnType<typeof createClient>;
