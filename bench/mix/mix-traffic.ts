// The mix's requests: a fixed sequence drawn from a seeded generator, each request going to an account with a
// probability proportional to its size. Per 100 requests: 60 list reads, 15 gets (half conditional), 10 creations,
// 10 PATCHes, 5 others (feed, /v1/me). Each operation is rendered twice: as Balcão's request (with the account's
// key) and as the bare mix server's (same operation, same parameters, no key).
import { encodeCursor } from '../../src/query/cursor.ts';
import { etagOf } from '../../src/resources/engines/etag.ts';
import {
  ACCOUNTS,
  accountId,
  customerCreatedAt,
  customerId,
  customersOf,
  customerVersion,
  saleId,
  salesOf,
  saleVersion,
} from './mix-data.ts';

/** The operations and their share per 100 requests. */
export const MIX = {
  'list customers, first page': 20,
  'list customers, cursor': 10,
  'list customers, full_name ilike': 8,
  'list customers, sort=full_name': 7,
  'list customers, is_active=false': 5,
  'list sales, first page': 6,
  'list sales, status=pending': 4,
  'get customer': 4,
  'get customer, If-None-Match': 3,
  'get sale with items, history': 4,
  'get sale, If-None-Match': 4,
  'create customer': 5,
  'create sale': 5,
  'patch customer': 6,
  'patch sale status': 4,
  'feed read': 3,
  'GET /v1/me': 2,
} as const satisfies Record<string, number>;
export type OpName = keyof typeof MIX;

export interface Op {
  name: OpName;
  rank: number;
  /** Row number within the account (the record read, changed or after which the page starts). */
  row: number;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  headers: Record<string, string>;
  /** `{n}` is replaced by a value unique to the request (names, notes, statuses, Idempotency-Keys). */
  body?: string;
  idempotent?: boolean;
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` operations in a shuffled order with exactly the mix's shares (per full 100). */
export function mixSequence(count: number, scale: number, seed: number): Op[] {
  const next = random(seed);
  const weights = Array.from({ length: ACCOUNTS }, (_, k) => customersOf(k + 1, scale));
  const cumulative: number[] = [];
  let total = 0;
  for (const w of weights) {
    total += w;
    cumulative.push(total);
  }
  const pickRank = () => {
    const x = next() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! > x) hi = mid;
      else lo = mid + 1;
    }
    return lo + 1;
  };
  const names = Object.entries(MIX).flatMap(([name, share]) => Array<OpName>(share).fill(name as OpName));
  const ops: Op[] = [];
  while (ops.length < count) {
    const order = [...names];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const name of order) {
      const rank = pickRank();
      const rows = name.includes('sale') ? salesOf(rank, scale) : customersOf(rank, scale);
      // Conditional gets read odd rows, PATCHes change even ones: a conditional get's tag stays current.
      let row = 1 + Math.floor(next() * rows);
      if (name.includes('If-None-Match')) row = row % 2 === 1 ? row : row - 1 || 1;
      if (name.startsWith('patch')) row = row % 2 === 0 ? row : row + 1 > rows ? row - 1 : row + 1;
      ops.push({ name, rank, row: Math.max(1, row) });
    }
  }
  return ops.slice(0, count);
}

const item = (n: number) => ({
  catalog_type: 'product',
  catalog_item_id: customerId(0, 1 + (n % 500)),
  quantity: 1,
  unit_price: 25,
});
const SALE_BODY = JSON.stringify({ items: [item(1), item(2), item(3)] });

/** Balcão's request for an operation. */
export function balcaoRequest(op: Op, keys: readonly string[]): HttpRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${keys[op.rank - 1]}` };
  const { rank, row } = op;
  const get = (path: string, extra: Record<string, string> = {}): HttpRequest => ({
    method: 'GET',
    path,
    headers: { ...headers, ...extra },
  });
  switch (op.name) {
    case 'list customers, first page':
      return get('/v1/customers?limit=20');
    case 'list customers, cursor':
      return get(`/v1/customers?limit=20&cursor=${encodeCursor('-created_at', customerCreatedAt(row), customerId(rank, row))}`);
    case 'list customers, full_name ilike':
      return get('/v1/customers?limit=20&filter[full_name][ilike]=Ana%25');
    case 'list customers, sort=full_name':
      return get('/v1/customers?limit=20&sort=full_name');
    case 'list customers, is_active=false':
      return get('/v1/customers?limit=20&filter[is_active][eq]=false');
    case 'list sales, first page':
      return get('/v1/sales?limit=20');
    case 'list sales, status=pending':
      return get('/v1/sales?limit=20&filter[status][eq]=pending');
    case 'get customer':
      return get(`/v1/customers/${customerId(rank, row)}`);
    case 'get customer, If-None-Match':
      return get(`/v1/customers/${customerId(rank, row)}`, { 'if-none-match': etagOf(customerId(rank, row), customerVersion(row)) });
    case 'get sale with items, history':
      return get(`/v1/sales/${saleId(rank, row)}?include=items,status_history`);
    case 'get sale, If-None-Match':
      return get(`/v1/sales/${saleId(rank, row)}?include=items,status_history`, {
        'if-none-match': etagOf(saleId(rank, row), saleVersion(row)),
      });
    case 'create customer':
      return {
        method: 'POST',
        path: '/v1/customers',
        headers,
        body: JSON.stringify({ full_name: 'Mix {n}', email: 'mix-{n}@example.com.br' }),
        idempotent: true,
      };
    case 'create sale':
      return { method: 'POST', path: '/v1/sales', headers, body: SALE_BODY, idempotent: true };
    case 'patch customer':
      return { method: 'PATCH', path: `/v1/customers/${customerId(rank, row)}`, headers, body: '{"notes":"{n}"}' };
    case 'patch sale status':
      return { method: 'PATCH', path: `/v1/sales/${saleId(rank, row)}`, headers, body: '{"status":"{n}"}' };
    case 'feed read':
      return get('/v1/events?limit=20');
    case 'GET /v1/me':
      return get('/v1/me');
  }
}

/** The bare mix server's request for the same operation: `/<operation>?team=…&row…`. */
export function bareRequest(op: Op): HttpRequest {
  const b = balcaoRequest(op, []);
  const { rank, row } = op;
  const q = new URLSearchParams({ team: accountId(rank) });
  const headers: Record<string, string> = {};
  if (b.headers['if-none-match']) headers['if-none-match'] = b.headers['if-none-match'];
  const slug: Record<OpName, string> = {
    'list customers, first page': 'customers-first',
    'list customers, cursor': 'customers-cursor',
    'list customers, full_name ilike': 'customers-ilike',
    'list customers, sort=full_name': 'customers-sort',
    'list customers, is_active=false': 'customers-inactive',
    'list sales, first page': 'sales-first',
    'list sales, status=pending': 'sales-status',
    'get customer': 'customer',
    'get customer, If-None-Match': 'customer',
    'get sale with items, history': 'sale',
    'get sale, If-None-Match': 'sale',
    'create customer': 'customer',
    'create sale': 'sale',
    'patch customer': 'customer',
    'patch sale status': 'sale',
    'feed read': 'feed',
    'GET /v1/me': 'me',
  };
  if (op.name === 'list customers, cursor') {
    q.set('value', customerCreatedAt(row));
    q.set('id', customerId(rank, row));
  }
  if (op.name.startsWith('get customer') || op.name === 'patch customer') q.set('id', customerId(rank, row));
  if (op.name.startsWith('get sale') || op.name === 'patch sale status') q.set('id', saleId(rank, row));
  return { method: b.method, path: `/${slug[op.name]}?${q}`, headers, body: b.body };
}
