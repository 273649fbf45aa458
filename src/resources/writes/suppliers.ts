// Writes of /v1/suppliers (SPEC 2.4): at least one of the three names, `is_active` set by the
// server (true on creation, never from the body), pix keys as {type, key} objects.
import { type Static, Type } from '@sinclair/typebox';
import type { FieldError } from '../../errors/app-error.ts';
import type { Body, Row, WriteDescriptor } from '../descriptor.ts';
import { optional, partialOf, W } from './fields.ts';

const PixKeyInput = Type.Object(
  {
    type: W.text({ minLength: 1, maxLength: 40, examples: ['cpf'] }),
    key: W.text({ minLength: 1, maxLength: 255 }),
  },
  { title: 'PixKeyInput' },
);

const supplierFields = {
  name: W.textOrNull({ description: 'At least one of name, legal_name, trade_name is required.', examples: ['Distribuidora Silva'] }),
  legal_name: W.textOrNull(),
  trade_name: W.textOrNull(),
  document_number: W.textOrNull({ description: 'CPF or CNPJ' }),
  email: W.emailOrNull(),
  phone: W.textOrNull(),
  phone1: W.textOrNull(),
  phone2: W.textOrNull(),
  phone3: W.textOrNull(),
  rg: W.textOrNull(),
  code: W.textOrNull(),
  birth_date: W.dateOrNull(),
  is_employee: W.booleanOrNull(),
  address_street: W.textOrNull(),
  address_number: W.textOrNull(),
  address_neighborhood: W.textOrNull(),
  address_city: W.textOrNull(),
  address_state: W.textOrNull(),
  address_country: W.textOrNull(),
  address_zip_code: W.textOrNull(),
  pix_keys: Type.Union([Type.Array(PixKeyInput, { maxItems: 50 }), Type.Null()]),
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
    toInsert: (_ctx, body) => ({ ...body, is_active: true }),
  },
};
