// What the bare baselines share (bench/bare-server.js, bench/mix/bare-mix-server.js): the connection as Balcão opens
// it (named prepared statements, numbers as numbers) and the serializers of the records they answer.
import fastJson from 'fast-json-stringify';
import postgres from 'postgres';

const OID = { int8: 20, numeric: 1700, date: 1082, time: 1083 };
const toNumber = (v) => (v === null ? null : Number(v));
export const sql = postgres(process.env.DATABASE_URL, {
  max: Number(process.env.BALCAO_DB_POOL_SIZE || 10),
  connection: { TimeZone: 'UTC' },
  types: {
    bigint: { to: OID.int8, from: [OID.int8], serialize: String, parse: toNumber },
    numeric: { to: OID.numeric, from: [OID.numeric], serialize: String, parse: toNumber },
    date: { to: OID.date, from: [OID.date, OID.time], serialize: String, parse: (v) => v },
  },
});

// sql.unsafe() sends unnamed statements unless asked: the baseline prepares, as tagged queries do.
export const PREPARED = { prepare: true };

/** A JSON schema of nullable columns: s string, n number, b boolean, t timestamp. */
export const row = (spec) => ({
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(spec).map(([name, kind]) => {
      const type = { s: 'string', n: 'number', b: 'boolean', t: 'string' }[kind];
      return [name, kind === 't' ? { type: [type, 'null'], format: 'date-time' } : { type: [type, 'null'] }];
    }),
  ),
});
export const customer = row({
  id: 's',
  full_name: 's',
  email: 's',
  phone: 's',
  document: 's',
  birth_date: 's',
  notes: 's',
  is_active: 'b',
  gender: 's',
  address_country: 's',
  address_state: 's',
  address_city: 's',
  address_neighborhood: 's',
  address_street: 's',
  address_number: 's',
  address_complement: 's',
  address_zip_code: 's',
  accepts_communications: 'b',
  valid_whatsapp: 'b',
  profile_photo_url: 's',
  whatsapp_photo: 's',
  created_at: 't',
  updated_at: 't',
});
export const sale = row({
  id: 's',
  customer_id: 's',
  transaction_type: 's',
  transaction_number: 's',
  status: 's',
  sale_date: 't',
  delivery_date: 's',
  subtotal: 'n',
  discount_amount: 'n',
  discount_percentage: 'n',
  tax_amount: 'n',
  total_amount: 'n',
  notes: 's',
  payment_method: 's',
  payment_status: 's',
  delivery_fee: 'n',
  order_code: 's',
  is_active: 'b',
  created_at: 't',
  updated_at: 't',
});
export const item = row({
  id: 's',
  catalog_type: 's',
  catalog_item_id: 's',
  quantity: 'n',
  unit_price: 'n',
  discount_amount: 'n',
  discount_percentage: 'n',
  subtotal: 'n',
  total_amount: 'n',
  notes: 's',
  created_at: 't',
});
export const history = row({ id: 's', old_status: 's', new_status: 's', change_reason: 's', created_at: 't' });
export const page = (item) =>
  fastJson({
    type: 'object',
    properties: {
      data: { type: 'array', items: item },
      pagination: {
        type: 'object',
        properties: { next_cursor: { type: ['string', 'null'] }, has_more: { type: 'boolean' }, limit: { type: 'integer' } },
      },
    },
  });
