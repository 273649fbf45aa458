// Writes of /v1/customers (SPEC 2.1): the create and update bodies and the rule that a
// customer without e-mail needs a phone.
import { type Static, Type } from '@sinclair/typebox';
import type { FieldError } from '../../errors/app-error.ts';
import type { Body, Row, WriteDescriptor } from '../descriptor.ts';
import { optional, partialOf, W } from './fields.ts';

const fullName = W.text({ minLength: 1, maxLength: 255, examples: ['Maria da Silva'] });

const optionalFields = {
  email: W.emailOrNull({ description: 'Required (non-null) when `phone` is null.' }),
  phone: W.textOrNull({
    minLength: 1,
    maxLength: 40,
    description: 'Required (non-null) when `email` is null.',
    examples: ['+55 11 91234-5678'],
  }),
  document: W.textOrNull({ description: 'CPF or CNPJ' }),
  gender: W.textOrNull(),
  notes: W.textOrNull(),
  birth_date: W.dateOrNull(),
  accepts_communications: W.boolean(),
  address_country: W.textOrNull(),
  address_state: W.textOrNull(),
  address_city: W.textOrNull(),
  address_neighborhood: W.textOrNull(),
  address_street: W.textOrNull(),
  address_number: W.textOrNull(),
  address_complement: W.textOrNull(),
  address_zip_code: W.textOrNull(),
};

export const CreateCustomerInput = Type.Object({ full_name: fullName, ...optional(optionalFields) }, { title: 'CreateCustomerInput' });

export const UpdateCustomerInput = partialOf(
  { full_name: fullName, ...optionalFields, is_active: W.boolean({ description: 'false deactivates the customer, true reactivates it.' }) },
  {
    title: 'UpdateCustomerInput',
  },
);

export type CreateCustomer = Static<typeof CreateCustomerInput>;

const absent = (value: unknown) => value === undefined || value === null;

/**
 * A customer must stay reachable: with `email` null (or omitted on POST), `phone` is required.
 * On PATCH the rule applies to the record as it would be stored, and only when the body sets
 * `email` or `phone`, so an imported record lacking both can still get other changes.
 */
function contactRule(body: Body, current: Row | undefined): FieldError[] {
  if (current && !('email' in body) && !('phone' in body)) return [];
  const email = 'email' in body ? body.email : current?.email;
  const phone = 'phone' in body ? body.phone : current?.phone;
  if (!absent(email) || !absent(phone)) return [];
  return [{ field: 'phone', code: 'required_when_email_null', message: 'O telefone é obrigatório quando o e-mail não é informado.' }];
}

export const customerWrite: WriteDescriptor = {
  create: CreateCustomerInput,
  update: UpdateCustomerInput,
  softDelete: { is_active: false },
  rules: {
    check: contactRule,
    toInsert: (_ctx, body) => ({ ...body, is_active: true }),
  },
};
