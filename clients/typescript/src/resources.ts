// The typed calls of each resource: lists (one page, or every page through an async iterator), reads, for the
// writable resources create, update and delete, and for those with external ids the upsert. Shapes come from the
// generated description types.
import type { components } from './generated/balcao-api.js';
import type { Filter, QueryValue, RequestOptions, Transport } from './transport.js';

type Schemas = components['schemas'];
type Bodies = components['requestBodies'];
type JsonBody<N extends keyof Bodies> = Bodies[N] extends { content: { 'application/json': infer B } } ? B : never;

export type Pagination = Schemas['Pagination'];
export interface Page<T> {
  data: T[];
  pagination: Pagination;
  meta: Schemas['Meta'];
}
export interface Item<T> {
  data: T;
  meta: Schemas['Meta'];
}

export interface ListParams {
  limit?: number;
  cursor?: string;
  sort?: string;
  fields?: string | readonly string[];
  filter?: Filter;
  [parameter: string]: QueryValue | Filter | undefined;
}
export interface GetParams {
  fields?: string | readonly string[];
  include?: string | readonly string[];
}
export interface WriteOptions {
  /** POST and PUT (upsert): replays the first answer for 24 hours instead of writing twice. A new UUID when absent. */
  idempotencyKey?: string;
  /** PUT, PATCH and DELETE: `If-Match` with the record's ETag. */
  ifMatch?: string;
  signal?: AbortSignal;
}

const query = (params: object | undefined): RequestOptions['query'] => params as RequestOptions['query'];
const writeHeaders = (options: WriteOptions): Record<string, string> => (options.ifMatch ? { 'if-match': options.ifMatch } : {});

/** Every item of every page, one request per page, while `has_more`. */
export async function* everyPage<T>(list: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    yield* page.data;
    cursor = page.pagination.has_more ? (page.pagination.next_cursor ?? undefined) : undefined;
  } while (cursor);
}

export interface ReadOnly<T> {
  list(params?: ListParams): Promise<Page<T>>;
  all(params?: Omit<ListParams, 'cursor'>): AsyncGenerator<T, void, undefined>;
  get(id: string, params?: GetParams): Promise<T>;
}

export interface Writable<T, Create, Update> extends ReadOnly<T> {
  create(body: Create, options?: WriteOptions): Promise<T>;
  update(id: string, body: Update, options?: WriteOptions): Promise<T>;
  delete(id: string, options?: WriteOptions): Promise<void>;
}

/** What an upsert did (the `Balcao-Upsert` header); null on the replay of a 200, which carries its body only. */
export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

export interface Upserted<T> {
  /** The record: as POST answers it when created (a sale with its items), else as PATCH answers it. */
  data: T;
  outcome: UpsertOutcome | null;
  /** The record's version (`ETag`), for a later `ifMatch`. */
  etag: string | null;
}

export interface Upsertable<T, Create, Update> extends Writable<T, Create, Update> {
  /**
   * `PUT …/by-external-id/{externalId}`: creates the record with this external id (as `create` would), or applies
   * `body` to the one that has it (as `update` would); writes nothing when that would change nothing. The body is
   * the creation's. Safe to repeat: an Idempotency-Key goes with it, and a second upsert of the same body changes nothing.
   */
  upsert(externalId: string, body: Create, options?: WriteOptions): Promise<Upserted<T>>;
}

export function readOnly<T>(t: Transport, path: string): ReadOnly<T> {
  const list = async (params?: ListParams) => (await t.request<Page<T>>('GET', path, { query: query(params) })).data;
  return {
    list,
    all: (params) => everyPage((cursor) => list({ ...params, cursor })),
    get: async (id, params) => (await t.request<Item<T>>('GET', `${path}/${encodeURIComponent(id)}`, { query: query(params) })).data.data,
  };
}

export function writable<T, Create, Update>(t: Transport, path: string): Writable<T, Create, Update> {
  const item = (id: string) => `${path}/${encodeURIComponent(id)}`;
  return {
    ...readOnly<T>(t, path),
    create: async (body, options = {}) =>
      (await t.request<Item<T>>('POST', path, { body, idempotencyKey: options.idempotencyKey, signal: options.signal })).data.data,
    update: async (id, body, options = {}) =>
      (await t.request<Item<T>>('PATCH', item(id), { body, headers: writeHeaders(options), signal: options.signal })).data.data,
    delete: async (id, options = {}) => {
      await t.request('DELETE', item(id), { headers: writeHeaders(options), signal: options.signal });
    },
  };
}

const OUTCOMES: readonly string[] = ['created', 'updated', 'unchanged'];

export function upsertable<T, Create, Update>(t: Transport, path: string): Upsertable<T, Create, Update> {
  return {
    ...writable<T, Create, Update>(t, path),
    upsert: async (externalId, body, options = {}) => {
      const { data, response } = await t.request<Item<T>>('PUT', `${path}/by-external-id/${encodeURIComponent(externalId)}`, {
        body,
        headers: writeHeaders(options),
        idempotencyKey: options.idempotencyKey,
        signal: options.signal,
      });
      const outcome = response.headers.get('balcao-upsert');
      return {
        data: data.data,
        outcome: outcome !== null && OUTCOMES.includes(outcome) ? (outcome as UpsertOutcome) : null,
        etag: response.headers.get('etag'),
      };
    },
  };
}

export type Customer = Schemas['Customer'];
export type Sale = Schemas['Sale'];
export type Supplier = Schemas['Supplier'];
export type Expense = Schemas['Expense'];
export type CreateCustomerInput = JsonBody<'CreateCustomerInput'>;
export type UpdateCustomerInput = JsonBody<'UpdateCustomerInput'>;
export type CreateSaleInput = JsonBody<'CreateSaleInput'>;
export type UpdateSaleInput = JsonBody<'UpdateSaleInput'>;
export type CreateSupplierInput = JsonBody<'CreateSupplierInput'>;
export type UpdateSupplierInput = JsonBody<'UpdateSupplierInput'>;
export type CreateExpenseInput = JsonBody<'CreateExpenseInput'>;
export type UpdateExpenseInput = JsonBody<'UpdateExpenseInput'>;
export type BatchRequest = JsonBody<'BatchRequest'>;
export type CreateWebhookEndpointInput = JsonBody<'CreateWebhookEndpointInput'>;
export type UpdateWebhookEndpointInput = JsonBody<'UpdateWebhookEndpointInput'>;
export type ReplayWebhookInput = JsonBody<'ReplayWebhookInput'>;
