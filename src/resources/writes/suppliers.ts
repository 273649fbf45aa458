// Writes of /v1/suppliers (SPEC 2.4): at least one of the three names, `is_active` set by the
// server (true on creation, never from the body), pix keys as {type, key} objects.
import { type Static, Type } from '@sinclair/typebox';
import type { FieldError } from '../../errors/app-error.ts';
import type { Body, Row, WriteDescriptor } from '../descriptor.ts';
import { MAX_LIST_ITEMS, TEXT_BOUNDS } from '../../schemas/bounds.ts';
import { activeFromNow, optional, partialOf, W } from './fields.ts';
import { externalIdInput } from '../engines/external-id.ts';

const MAX = TEXT_BOUNDS.suppliers;

const PixKeyInput = Type.Object(
  {
    type: W.text({ minLength: 1, maxLength: MAX.pix_key_type, examples: ['cpf'] }),
    key: W.text({ minLength: 1, maxLength: MAX.pix_key }),
  },
  { title: 'PixKeyInput' },
);

const supplierFields = {
  name: W.textOrNull({
    maxLength: MAX.name,
    description: 'At least one of name, legal_name, trade_name is required.',
    examples: ['Distribuidora Silva'],
  }),
  legal_name: W.textOrNull({ maxLength: MAX.legal_name }),
  trade_name: W.textOrNull({ maxLength: MAX.trade_name }),
  document_number: W.textOrNull({ maxLength: MAX.document_number, description: 'CPF or CNPJ' }),
  email: W.emailOrNull(),
  phone: W.textOrNull({ maxLength: MAX.phone }),
  phone1: W.textOrNull({ maxLength: MAX.phone1 }),
  phone2: W.textOrNull({ maxLength: MAX.phone2 }),
  phone3: W.textOrNull({ maxLength: MAX.phone3 }),
  rg: W.textOrNull({ maxLength: MAX.rg }),
  code: W.textOrNull({ maxLength: MAX.code }),
  birth_date: W.dateOrNull(),
  is_employee: W.booleanOrNull(),
  address_street: W.textOrNull({ maxLength: MAX.address_street }),
  address_number: W.textOrNull({ maxLength: MAX.address_number }),
  address_neighborhood: W.textOrNull({ maxLength: MAX.address_neighborhood }),
  address_city: W.textOrNull({ maxLength: MAX.address_city }),
  address_state: W.textOrNull({ maxLength: MAX.address_state }),
  address_country: W.textOrNull({ maxLength: MAX.address_country }),
  address_zip_code: W.textOrNull({ maxLength: MAX.address_zip_code }),
  pix_keys: Type.Union([Type.Array(PixKeyInput, { maxItems: MAX_LIST_ITEMS }), Type.Null()]),
  external_id: externalIdInput(),
};

export const CreateSupplierInput = Type.Object(optional(supplierFields), { title: 'CreateSupplierInput' });
export const UpdateSupplierInput = partialOf(supplierFields, { title: 'UpdateSupplierInput' });

export type CreateSupplier = Static<typeof CreateSupplierInput>;

const NAMES = ['name', 'legal_name', 'trade_name'] as const;
const named = (value: unknown) => typeof value === 'string' && value.trim() !== '';

/** POST needs one non-blank name; a PATCH touching the names must leave at least one. */
function nameRule(body: Body, current: Row | undefined): FieldError[] {
  if (current && !NAMES.some((n) => n in body)) return [];
  if (NAMES.some((n) => named(n in body ? body[n] : current?.[n]))) return [];
  return [{ field: 'name', code: 'name_required', message: 'Informe ao menos um entre name, legal_name e trade_name.' }];
}

export const supplierWrite: WriteDescriptor = {
  create: CreateSupplierInput,
  update: UpdateSupplierInput,
  softDelete: { is_active: false },
  rules: {
    check: nameRule,
    toInsert: activeFromNow,
    answersFromValues: true,
    // The name rule reads the stored row only when the body touches a name.
    unreadUpdate: (body) => (NAMES.some((n) => n in body) ? undefined : { ...body }),
  },
};
