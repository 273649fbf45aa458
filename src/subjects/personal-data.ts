// What Balcão holds about a customer as a person (LGPD art. 18), and how an erasure anonymises it: the customer's
// personal fields become null or a fixed placeholder, and the free text of their sales, appointments and deals,
// which may name them, is cleared. Amounts, dates, numbers and statuses stay: the books still add up.

/** The name an erased customer keeps (full_name is required). */
export const ERASED_NAME = 'Titular anonimizado';
/** What replaces the person's name, e-mail, phone or document inside stored text (responses, log fields). */
export const REDACTED = '[anonimizado]';

/** The customer's personal fields and the value each takes once erased. */
export const ERASED_CUSTOMER: Readonly<Record<string, string | null>> = {
  full_name: ERASED_NAME,
  email: null,
  phone: null,
  document: null,
  birth_date: null,
  gender: null,
  address_street: null,
  address_number: null,
  address_complement: null,
  address_neighborhood: null,
  address_city: null,
  address_state: null,
  address_zip_code: null,
  address_country: null,
  profile_photo_url: null,
  whatsapp_photo: null,
  valid_whatsapp: null,
  accepts_communications: null,
  notes: null,
  internal_notes: null,
};

/** Free text of the person's records, which may name them: cleared (null) by an erasure. */
export const FREE_TEXT: Readonly<Record<string, readonly string[]>> = {
  transactions: ['notes', 'internal_notes'],
  transaction_items: ['notes'],
  transaction_status_history: ['change_reason'],
  appointments: ['notes', 'customer_notes', 'internal_notes', 'cancellation_reason'],
  deals: ['internal_notes', 'lost_reason'],
};

/** Shorter values are not searched for in stored text: they would match unrelated words. */
const MIN_IDENTIFIER_LENGTH = 4;

/** The values that identify the person in stored text: name, e-mail, phone, document. */
export function identifiersOf(customer: Record<string, unknown>): string[] {
  return [customer.full_name, customer.email, customer.phone, customer.document].filter(
    (v): v is string => typeof v === 'string' && v.trim().length >= MIN_IDENTIFIER_LENGTH && v !== ERASED_NAME,
  );
}

export function mentionsAny(text: string, identifiers: readonly string[]): boolean {
  const lower = text.toLowerCase();
  return identifiers.some((id) => lower.includes(id.toLowerCase()));
}

/** `text` with every occurrence of an identifier (in any letter case) replaced by REDACTED. */
export function redactText(text: string, identifiers: readonly string[]): string {
  let out = text;
  for (const id of identifiers) out = out.replace(new RegExp(id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), REDACTED);
  return out;
}

/**
 * A stored JSON document (a response, an event's payload) as it would read after the erasure: the customer's own
 * object gets the erased values, the free text of their records is cleared, and any other text naming them is
 * redacted.
 */
export function redactDocument(value: unknown, customerId: string, identifiers: readonly string[]): unknown {
  if (typeof value === 'string') return mentionsAny(value, identifiers) ? redactText(value, identifiers) : value;
  if (Array.isArray(value)) return value.map((v) => redactDocument(v, customerId, identifiers));
  if (value === null || typeof value !== 'object') return value;
  const object = { ...(value as Record<string, unknown>) };
  if (object.id === customerId && 'full_name' in object) {
    for (const [field, erased] of Object.entries(ERASED_CUSTOMER)) if (field in object) object[field] = erased;
  }
  if (object.customer_id === customerId) {
    for (const field of new Set(Object.values(FREE_TEXT).flat())) if (field in object) object[field] = null;
    for (const nested of ['items', 'status_history']) {
      const list = object[nested];
      if (Array.isArray(list))
        object[nested] = list.map((entry) =>
          entry && typeof entry === 'object'
            ? { ...entry, ...('notes' in entry ? { notes: null } : {}), ...('change_reason' in entry ? { change_reason: null } : {}) }
            : entry,
        );
    }
  }
  for (const [key, v] of Object.entries(object)) object[key] = redactDocument(v, customerId, identifiers);
  return object;
}
