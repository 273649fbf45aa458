// The bare baseline of the many-account mix: node:http, postgres.js (named prepared statements) and, for each
// operation of the mix, the SQL Balcão sends for it, for whichever account the request names
// (`/<operation>?team=<account id>&…`). No auth, no limits, no idempotency, no events, no framework, no logs.
// Plain JavaScript, as bench/bare-server.js. Env: DATABASE_URL; prints its port on stdout once listening.
import { createHash } from 'node:crypto';
import http from 'node:http';
import fastJson from 'fast-json-stringify';
import { customer, history, item, page, PREPARED, row, sale, sql } from '../bare-common.js';

const customerPage = page(customer);
const salePage = page(sale);
const saleJson = fastJson({
  type: 'object',
  properties: {
    data: {
      ...sale,
      properties: { ...sale.properties, items: { type: 'array', items: item }, status_history: { type: 'array', items: history } },
    },
  },
});
const customerJson = fastJson({ type: 'object', properties: { data: customer } });
const meJson = fastJson(row({ id: 's', name: 's', plan_code: 's' }));

const CUSTOMER_COLUMNS = `"id", "full_name", "email", "phone", "document", "birth_date", "notes", "is_active", "gender", "address_country", "address_state", "address_city", "address_neighborhood", "address_street", "address_number", "address_complement", "address_zip_code", "accepts_communications", "valid_whatsapp", "profile_photo_url", "whatsapp_photo", "created_at", "updated_at"`;
const SALE_COLUMNS = `"id", "customer_id", "transaction_type", "transaction_number", "status", "sale_date", "delivery_date", "subtotal", "discount_amount", "discount_percentage", "tax_amount", "total_amount", "notes", "payment_method", "payment_status", "delivery_fee", "order_code", "is_active", "created_at", "updated_at"`;
const CURSOR_VALUE = `to_char("created_at" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as "__cursor_value"`;
const VERSION = `to_char("updated_at" at time zone 'UTC', 'YYYYMMDDHH24MISSUS') as "__version"`;
const NEWEST = `order by "created_at" desc, "id" desc limit 21`;
const CUSTOMERS = `select ${CUSTOMER_COLUMNS}, ${CURSOR_VALUE} from "customers" where "team_id" = $1 and "mode" = $2`;
const SALES = `select ${SALE_COLUMNS}, ${CURSOR_VALUE} from "transactions" where "team_id" = $1 and "mode" = $2 and "transaction_type" in ('sale', 'order')`;
const LIST = {
  'customers-first': { text: `${CUSTOMERS} ${NEWEST}`, json: customerPage },
  'customers-cursor': {
    text: `${CUSTOMERS} and ("created_at", "id") < ((select cast($3 as timestamptz)), (select cast($4 as uuid))) ${NEWEST}`,
    json: customerPage,
    params: (q) => [q.get('value'), q.get('id')],
  },
  'customers-ilike': { text: `${CUSTOMERS} and "full_name" ilike $3 ${NEWEST}`, json: customerPage, params: () => ['Ana%'] },
  'customers-sort': {
    text: `select ${CUSTOMER_COLUMNS} from "customers" where "team_id" = $1 and "mode" = $2 order by "full_name" asc, "id" asc limit 21`,
    json: customerPage,
  },
  'customers-inactive': { text: `${CUSTOMERS} and "is_active" = $3 ${NEWEST}`, json: customerPage, params: () => [false] },
  'sales-first': { text: `${SALES} ${NEWEST}`, json: salePage },
  'sales-status': { text: `${SALES} and "status" = $3 ${NEWEST}`, json: salePage, params: () => ['pending'] },
};
const CUSTOMER = `select ${CUSTOMER_COLUMNS}, ${VERSION} from "customers" where "team_id" = $1 and "mode" = $2 and "id" = $3`;
const SALE = `select ${SALE_COLUMNS}, ${VERSION} from "transactions" where "team_id" = $1 and "mode" = $2 and "transaction_type" in ('sale', 'order') and "id" = $3`;
const ITEMS = `select "id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "discount_amount", "discount_percentage", "subtotal", "total_amount", "notes", "created_at" from "transaction_items" where "team_id" = $1 and "mode" = $2 and "transaction_id" = $3 order by "created_at" asc, "id" asc`;
const HISTORY = `select "id", "old_status", "new_status", "change_reason", "created_at" from "transaction_status_history" where "team_id" = $1 and "mode" = $2 and "transaction_id" = $3 order by "created_at" asc, "id" asc`;
const FEED = `select "id", "type", "resource", "data", "request_id", "origin", "created_at" from "events" where "team_id" = $1 and "mode" = $2 and "created_at" > now() - interval '30 days' order by "created_at" desc, "id" desc limit 21`;
const ME = `select "id", "name", "plan_code" from "accounts" where "id" = $1`;
const INSERT_CUSTOMER = `insert into "customers" ("full_name", "email", "team_id", "mode") values ($1, $2, $3, $4) returning ${CUSTOMER_COLUMNS}`;
const INSERT_SALE = `insert into "transactions" ("customer_id", "transaction_type", "transaction_number", "status", "sale_date", "delivery_date", "subtotal", "discount_amount", "discount_percentage", "tax_amount", "total_amount", "notes", "payment_method", "payment_status", "delivery_fee", "order_code", "is_active", "team_id", "mode") values ($1, $2, $3, $4, now(), $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) returning *`;
const ITEM_ROW = (b) =>
  `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9}, $${b + 10}, $${b + 11}, $${b + 12}, $${b + 13}, now() + cast($${b + 14} as integer) * interval '1 microsecond')`;
const INSERT_ITEMS = (n) =>
  `insert into "transaction_items" ("id", "team_id", "mode", "transaction_id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "discount_amount", "discount_percentage", "subtotal", "total_amount", "notes", "created_at") values ${Array.from({ length: n }, (_, i) => ITEM_ROW(i * 14)).join(', ')}`;
const INSERT_HISTORY = `insert into "transaction_status_history" ("team_id", "mode", "transaction_id", "old_status", "new_status", "change_reason") values ($1, $2, $3, $4, $5, $6)`;
const UPDATE_CUSTOMER = `update "customers" set "notes" = $4, "updated_at" = now() where "team_id" = $1 and "mode" = $2 and "id" = $3 returning ${CUSTOMER_COLUMNS}`;
const LOCK_SALE = `select "status" from "transactions" where "team_id" = $1 and "mode" = $2 and "id" = $3 for update`;
const UPDATE_SALE_STATUS = `update "transactions" set "status" = $4, "updated_at" = now() where "team_id" = $1 and "mode" = $2 and "id" = $3 returning *`;

/** The strong tag of a record version, as src/resources/engines/etag.ts makes it. */
const etagOf = (id, version) =>
  `"${createHash('sha256')
    .update(`${id}|${version ?? ''}`)
    .digest('base64url')
    .slice(0, 27)}"`;
const cursorOf = (last) =>
  Buffer.from(JSON.stringify({ sort: '-created_at', value: last.__cursor_value, id: last.id }), 'utf8').toString('base64url');

async function list(name, team, q) {
  const spec = LIST[name];
  const rows = await sql.unsafe(spec.text, [team, 'live', ...(spec.params?.(q) ?? [])], PREPARED);
  const hasMore = rows.length > 20;
  const data = hasMore ? rows.slice(0, 20) : [...rows];
  return spec.json({ data, pagination: { next_cursor: hasMore ? cursorOf(data[19]) : null, has_more: hasMore, limit: 20 } });
}

/** A record read with its version: 304 when If-None-Match names it, else its body. */
async function conditional(req, found, render) {
  const tag = etagOf(found.id, found.__version);
  delete found.__version;
  if (req.headers['if-none-match'] === tag) return { status: 304, body: '', tag };
  return { status: 200, body: await render(found), tag };
}

const reads = {
  customer: async (req, team, q) => {
    const [found] = await sql.unsafe(CUSTOMER, [team, 'live', q.get('id')], PREPARED);
    return conditional(req, found, (r) => customerJson({ data: r }));
  },
  sale: async (req, team, q) => {
    const id = q.get('id');
    const [found] = await sql.unsafe(SALE, [team, 'live', id], PREPARED);
    return conditional(req, found, async (r) => {
      const [items, statusHistory] = await Promise.all([
        sql.unsafe(ITEMS, [team, 'live', id], PREPARED),
        sql.unsafe(HISTORY, [team, 'live', id], PREPARED),
      ]);
      return saleJson({ data: { ...r, items, status_history: statusHistory } });
    });
  },
  feed: async (_req, team) => {
    const rows = await sql.unsafe(FEED, [team, 'live'], PREPARED);
    const data = rows.slice(0, 20);
    return { status: 200, body: JSON.stringify({ data, pagination: { next_cursor: null, has_more: rows.length > 20, limit: 20 } }) };
  },
  me: async (_req, team) => {
    const [account] = await sql.unsafe(ME, [team], PREPARED);
    return { status: 200, body: meJson(account) };
  },
};

const creations = {
  customer: async (team, body) => {
    const [created] = await sql.unsafe(INSERT_CUSTOMER, [body.full_name, body.email, team, 'live'], PREPARED);
    return customerJson({ data: created });
  },
  /** One transaction inserting a sale, its items and its history entry, as Balcão writes them. */
  sale: (team, body) =>
    sql.begin(async (tx) => {
      const [created] = await tx.unsafe(
        INSERT_SALE,
        [null, 'sale', null, 'pending', null, '75', '0', null, null, '75', null, null, null, null, null, true, team, 'live'],
        PREPARED,
      );
      const params = body.items.flatMap((it, i) => [
        crypto.randomUUID(),
        team,
        'live',
        created.id,
        it.catalog_type,
        it.catalog_item_id,
        String(it.quantity),
        String(it.unit_price),
        null,
        null,
        '25',
        '25',
        null,
        i,
      ]);
      await tx.unsafe(INSERT_ITEMS(body.items.length), params, PREPARED);
      await tx.unsafe(INSERT_HISTORY, [team, 'live', created.id, null, 'pending', null], PREPARED);
      return JSON.stringify({ data: created });
    }),
};

const patches = {
  customer: async (team, id, body) => {
    const [updated] = await sql.unsafe(UPDATE_CUSTOMER, [team, 'live', id, body.notes], PREPARED);
    return customerJson({ data: updated });
  },
  sale: (team, id, body) =>
    sql.begin(async (tx) => {
      const [before] = await tx.unsafe(LOCK_SALE, [team, 'live', id], PREPARED);
      const [updated] = await tx.unsafe(UPDATE_SALE_STATUS, [team, 'live', id, body.status], PREPARED);
      await tx.unsafe(INSERT_HISTORY, [team, 'live', id, before.status, body.status, null], PREPARED);
      return JSON.stringify({ data: updated });
    }),
};

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://x');
    const name = url.pathname.slice(1);
    const q = url.searchParams;
    const team = q.get('team');
    if (req.method === 'POST' || req.method === 'PATCH') {
      let text = '';
      for await (const chunk of req) text += chunk;
      const input = JSON.parse(text);
      const body = req.method === 'POST' ? await creations[name](team, input) : await patches[name](team, q.get('id'), input);
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(body);
    } else if (LIST[name]) {
      const body = await list(name, team, q);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    } else {
      const { status, body, tag } = await reads[name](req, team, q);
      res.writeHead(status, tag ? { 'content-type': 'application/json', etag: tag } : { 'content-type': 'application/json' });
      res.end(body);
    }
  } catch (err) {
    res.writeHead(500);
    res.end(String(err));
  }
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))));
