// The bare baseline of `npm run bench`: node:http, postgres.js (named prepared statements, its
// default) and the SQL Balcão sends, for one fixed account, serialized with fast-json-stringify.
// No auth, no limits, no framework, no logs. Plain JavaScript, so nothing stands between Node
// and the request. Env: DATABASE_URL, ACCOUNT_ID; prints its port on stdout once listening.
import http from 'node:http';
import fastJson from 'fast-json-stringify';
import { customer, history, item, page, PREPARED, row, sale, sql } from './bare-common.js';

const team = process.env.ACCOUNT_ID;
const listJson = page(customer);
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
const CURSOR_VALUE = `to_char("created_at" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as "__cursor_value"`;
const LIST = {
  first: `select ${CUSTOMER_COLUMNS}, ${CURSOR_VALUE} from "customers" where "team_id" = $1 and "mode" = $2 order by "created_at" desc, "id" desc limit 21`,
  deep: `select ${CUSTOMER_COLUMNS}, ${CURSOR_VALUE} from "customers" where "team_id" = $1 and "mode" = $2 and ("created_at", "id") < ((select cast($3 as timestamptz)), (select cast($4 as uuid))) order by "created_at" desc, "id" desc limit 21`,
  ilike: `select ${CUSTOMER_COLUMNS}, ${CURSOR_VALUE} from "customers" where "team_id" = $1 and "mode" = $2 and "full_name" ilike $3 order by "created_at" desc, "id" desc limit 21`,
  sort: `select ${CUSTOMER_COLUMNS} from "customers" where "team_id" = $1 and "mode" = $2 order by "full_name" asc, "id" asc limit 21`,
};
// The lever's measure (bench/first-page.ts): PostgreSQL writes the page's JSON, Node passes the text on. The same
// 21 rows; the envelope's pagination from the 21st row and the 20th's cursor, read in the same statement.
const ISO = (column) => `to_char("${column}" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const FIRST_AS_JSON = `with page as (select ${CUSTOMER_COLUMNS}, ${CURSOR_VALUE}, row_number() over () as n from (select * from "customers" where "team_id" = $1 and "mode" = $2 order by "created_at" desc, "id" desc limit 21) c)
select coalesce((select json_agg(json_build_object(${CUSTOMER_COLUMNS.split(', ')
  .map((c) => {
    const name = c.replaceAll('"', '');
    return `'${name}', ${name.endsWith('_at') ? ISO(name) : c}`;
  })
  .join(', ')}) order by n) from page where n <= 20), '[]')::text as data,
  (select count(*) from page) > 20 as has_more, (select "__cursor_value" from page where n = 20) as value, (select "id" from page where n = 20) as id`;
const CUSTOMER = `select ${CUSTOMER_COLUMNS} from "customers" where "team_id" = $1 and "mode" = $2 and "id" = $3`;
const SALE = `select "id", "customer_id", "transaction_type", "transaction_number", "status", "sale_date", "delivery_date", "subtotal", "discount_amount", "discount_percentage", "tax_amount", "total_amount", "notes", "payment_method", "payment_status", "delivery_fee", "order_code", "is_active", "created_at", "updated_at" from "transactions" where "team_id" = $1 and "mode" = $2 and "transaction_type" in ('sale', 'order') and "id" = $3`;
const ITEMS = `select "id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "discount_amount", "discount_percentage", "subtotal", "total_amount", "notes", "created_at" from "transaction_items" where "team_id" = $1 and "mode" = $2 and "transaction_id" = $3 order by "created_at" asc, "id" asc`;
const HISTORY = `select "id", "old_status", "new_status", "change_reason", "created_at" from "transaction_status_history" where "team_id" = $1 and "mode" = $2 and "transaction_id" = $3 order by "created_at" asc, "id" asc`;
const INSERT_SALE = `insert into "transactions" ("customer_id", "transaction_type", "transaction_number", "status", "sale_date", "delivery_date", "subtotal", "discount_amount", "discount_percentage", "tax_amount", "total_amount", "notes", "payment_method", "payment_status", "delivery_fee", "order_code", "is_active", "team_id", "mode") values ($1, $2, $3, $4, now(), $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) returning *`;
const ITEM_ROW = (b) =>
  `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9}, $${b + 10}, $${b + 11}, $${b + 12}, $${b + 13}, now() + cast($${b + 14} as integer) * interval '1 microsecond')`;
const INSERT_ITEMS = `insert into "transaction_items" ("id", "team_id", "mode", "transaction_id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "discount_amount", "discount_percentage", "subtotal", "total_amount", "notes", "created_at") values ${Array.from({ length: 10 }, (_, i) => ITEM_ROW(i * 14)).join(', ')}`;
const INSERT_HISTORY = `insert into "transaction_status_history" ("team_id", "mode", "transaction_id", "old_status", "new_status", "change_reason") values ($1, $2, $3, $4, $5, $6)`;

const UPDATE_CUSTOMER = `update "customers" set "notes" = $4, "updated_at" = now() where "team_id" = $1 and "mode" = $2 and "id" = $3 returning ${CUSTOMER_COLUMNS}`;
const LOCK_SALE = `select "status" from "transactions" where "team_id" = $1 and "mode" = $2 and "id" = $3 for update`;
const UPDATE_SALE_STATUS = `update "transactions" set "status" = $4, "updated_at" = now() where "team_id" = $1 and "mode" = $2 and "id" = $3 returning *`;

const cursorOf = (last) =>
  Buffer.from(JSON.stringify({ sort: '-created_at', value: last.__cursor_value, id: last.id }), 'utf8').toString('base64url');

async function list(name, params) {
  const rows = await sql.unsafe(LIST[name], [team, 'live', ...params], PREPARED);
  const hasMore = rows.length > 20;
  const page = hasMore ? rows.slice(0, 20) : [...rows];
  return listJson({ data: page, pagination: { next_cursor: hasMore ? cursorOf(page[19]) : null, has_more: hasMore, limit: 20 } });
}

async function firstAsJson() {
  const [page] = await sql.unsafe(FIRST_AS_JSON, [team, 'live'], PREPARED);
  const next = page.has_more ? JSON.stringify(cursorOf({ __cursor_value: page.value, id: page.id })) : 'null';
  return `{"data":${page.data},"pagination":{"next_cursor":${next},"has_more":${page.has_more},"limit":20}}`;
}

let account;
const routes = {
  '/first': () => list('first', []),
  '/first-json': () => firstAsJson(),
  '/deep': (q) => list('deep', [q.get('value'), q.get('id')]),
  '/ilike': () => list('ilike', ['Ana%']),
  '/sort': () => list('sort', []),
  '/sale': async (q) => {
    const id = q.get('id');
    const [found] = await sql.unsafe(SALE, [team, 'live', id], PREPARED);
    const [items, statusHistory] = await Promise.all([
      sql.unsafe(ITEMS, [team, 'live', id], PREPARED),
      sql.unsafe(HISTORY, [team, 'live', id], PREPARED),
    ]);
    return saleJson({ data: { ...found, items, status_history: statusHistory } });
  },
  '/customer': async (q) => {
    const [found] = await sql.unsafe(CUSTOMER, [team, 'live', q.get('id')], PREPARED);
    return customerJson({ data: found });
  },
  '/me': async () => meJson(account),
};

/** POST: one transaction inserting a sale, its 10 items and its history entry, as Balcão writes them. */
async function insertSale(body) {
  return sql.begin(async (tx) => {
    const [created] = await tx.unsafe(
      INSERT_SALE,
      [null, 'sale', null, 'pending', null, '200', '0', null, null, '200', null, null, null, null, null, true, team, 'live'],
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
      '20',
      '20',
      null,
      i,
    ]);
    await tx.unsafe(INSERT_ITEMS, params, PREPARED);
    await tx.unsafe(INSERT_HISTORY, [team, 'live', created.id, null, 'pending', null], PREPARED);
    return JSON.stringify({ data: created });
  });
}

/** PATCH: a customer's notes (one UPDATE), or a sale's status (its row locked, changed, and a history entry). */
const patches = {
  '/customer': async (id, body) => {
    const [updated] = await sql.unsafe(UPDATE_CUSTOMER, [team, 'live', id, body.notes], PREPARED);
    return customerJson({ data: updated });
  },
  '/sale': (id, body) =>
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
    let body;
    if (req.method === 'POST' || req.method === 'PATCH') {
      let text = '';
      for await (const chunk of req) text += chunk;
      const input = JSON.parse(text);
      body = req.method === 'POST' ? await insertSale(input) : await patches[url.pathname](url.searchParams.get('id'), input);
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    } else {
      body = await routes[url.pathname](url.searchParams);
      res.writeHead(200, { 'content-type': 'application/json' });
    }
    res.end(body);
  } catch (err) {
    res.writeHead(500);
    res.end(String(err));
  }
});
[account] = await sql`select id, name, plan_code from accounts where id = ${team}`;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))));
