// The input bounds of the API, defined once: the longest text each column accepts, in characters
// (code points, as JSON Schema's maxLength counts them), by table and column. The write schemas
// (resources/writes/*, webhooks/endpoint-schema.ts) take their `maxLength` from here and the import
// checks every text column against `textBound`, so a value means the same thing wherever it enters.
//
// Why these numbers (docs/decisions.md, "Input bounds"):
// - Indexed text columns (names, documents, statuses, numbers) stay at or under 255 characters: at
//   4 bytes per character at most that is 1 020 bytes, well under the 2 704 bytes a btree entry may
//   hold on PostgreSQL even when the value does not compress.
// - The others fit real Brazilian data with room: a CNPJ with punctuation is 18 characters, a CEP 9,
//   a phone with country code about 20, the longest street names about 100.
// - Free text (notes, descriptions) is 5 000 characters: a long note, not a document.

/** Shared lengths, by kind of value. */
export const LENGTH = {
  /** Names of people, companies, products, accounts. Indexed. */
  name: 255,
  /** RFC 5321's longest forward path (formats.ts checks the same). */
  email: 254,
  phone: 40,
  /** CPF, CNPJ (18 with punctuation), RG, foreign tax ids. Indexed. */
  document: 32,
  zipCode: 16,
  state: 64,
  country: 64,
  city: 100,
  neighborhood: 100,
  street: 255,
  addressNumber: 20,
  complement: 255,
  gender: 32,
  /** Short codes: statuses, methods, types, numbers. Indexed where they are filtered on. */
  code: 50,
  /** Record numbers given by an integration or a legacy system (`API-<ms>-<6>`, invoice numbers). */
  number: 100,
  url: 2048,
  /** A tag of an expense. */
  tag: 64,
  /** Free text: notes, descriptions, reasons. */
  note: 5000,
} as const;

/** Every text column an API body or the import writes, by table. Columns not listed get `LENGTH.note`. */
export const TEXT_BOUNDS = {
  customers: {
    full_name: LENGTH.name,
    email: LENGTH.email,
    phone: LENGTH.phone,
    document: LENGTH.document,
    gender: LENGTH.gender,
    notes: LENGTH.note,
    address_country: LENGTH.country,
    address_state: LENGTH.state,
    address_city: LENGTH.city,
    address_neighborhood: LENGTH.neighborhood,
    address_street: LENGTH.street,
    address_number: LENGTH.addressNumber,
    address_complement: LENGTH.complement,
    address_zip_code: LENGTH.zipCode,
    profile_photo_url: LENGTH.url,
    whatsapp_photo: LENGTH.url,
  },
  transactions: {
    transaction_type: LENGTH.code,
    transaction_number: LENGTH.number,
    status: LENGTH.code,
    payment_status: LENGTH.code,
    payment_method: LENGTH.code,
    notes: LENGTH.note,
    order_code: LENGTH.number,
  },
  transaction_items: {
    catalog_type: LENGTH.code,
    notes: LENGTH.note,
  },
  transaction_status_history: {
    old_status: LENGTH.code,
    new_status: LENGTH.code,
    change_reason: LENGTH.note,
  },
  suppliers: {
    name: LENGTH.name,
    legal_name: LENGTH.name,
    trade_name: LENGTH.name,
    document_number: LENGTH.document,
    email: LENGTH.email,
    phone: LENGTH.phone,
    phone1: LENGTH.phone,
    phone2: LENGTH.phone,
    phone3: LENGTH.phone,
    rg: LENGTH.document,
    code: LENGTH.code,
    address_street: LENGTH.street,
    address_number: LENGTH.addressNumber,
    address_neighborhood: LENGTH.neighborhood,
    address_city: LENGTH.city,
    address_state: LENGTH.state,
    address_country: LENGTH.country,
    address_zip_code: LENGTH.zipCode,
    pix_key_type: LENGTH.code,
    pix_key: LENGTH.name,
  },
  expenses: {
    expense_number: LENGTH.number,
    expense_type: LENGTH.number,
    description: LENGTH.note,
    payment_method: LENGTH.code,
    check_number: LENGTH.code,
    status: LENGTH.code,
    notes: LENGTH.note,
    tag: LENGTH.tag,
    payment_reference: LENGTH.name,
  },
  bank_accounts: {
    account_name: LENGTH.name,
    bank_name: LENGTH.name,
    agency_number: LENGTH.code,
    account_number: LENGTH.code,
    account_type: LENGTH.code,
    currency: LENGTH.code,
  },
  recurring_expenses: { recurrence_frequency: LENGTH.code },
  services: { name: LENGTH.name, color: LENGTH.code },
  appointments: { status: LENGTH.code, appointment_type: LENGTH.code },
  catalog_items: { name: LENGTH.name, unit: LENGTH.code, ean_code: LENGTH.document, internal_code: LENGTH.code, image_url: LENGTH.url },
  inventory_items: { name: LENGTH.name, unit: LENGTH.code, ean_code: LENGTH.document },
  deal_stages: { name: LENGTH.name, color: LENGTH.code, milestone: LENGTH.code },
  deals: { status: LENGTH.code, origin_channel: LENGTH.code },
  webhook_endpoints: { url: LENGTH.url, description: 500 },
} as const satisfies Record<string, Record<string, number>>;

/** The longest text `table.column` accepts (an element's, for a text[] column). */
export function textBound(table: string, column: string): number {
  const columns = (TEXT_BOUNDS as Record<string, Record<string, number>>)[table];
  if (column === 'tags' && columns?.tag !== undefined) return columns.tag;
  return columns?.[column] ?? LENGTH.note;
}

/** The pattern of free text: anything but U+0000, which PostgreSQL text cannot hold. The server refuses it
 *  anyway (http/body-validation.ts); stating it gives every text input a pattern (OWASP string-restricted). */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

/** Most elements a text[] column or a body's list holds (tags, pix keys). */
export const MAX_LIST_ITEMS = 100;
