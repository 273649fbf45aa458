// The typed calls of each resource: lists (one page, or every page through an async iterator), reads, and for
// the writable resources create, update and delete. Shapes come from the generated description types.
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
  /** POST: replays the first answer for 24 hours instead of writing twice. A new UUID when absent. */
  idempotencyKey?: string;
  /** PATCH and DELETE: `If-Match` with the record's ETag. */
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
