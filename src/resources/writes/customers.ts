// Writes of /v1/customers (SPEC 2.1): the create and update bodies and the rule that a
// customer without e-mail needs a phone.
import { type Static, Type } from '@sinclair/typebox';
import type { FieldError } from '../../errors/app-error.ts';
import type { Body, Row, WriteDescriptor } from '../descriptor.ts';
import { TEXT_BOUNDS } from '../../schemas/bounds.ts';
import { activeFromNow, optional, partialOf, W } from './fields.ts';
import { externalIdInput } from '../engines/external-id.ts';

const MAX = TEXT_BOUNDS.customers;

const fullName = W.text({ minLength: 1, maxLength: MAX.full_name, examples: ['Maria da Silva'] });

const optionalFields = {
  email: W.emailOrNull({ description: 'Required (non-null) when `phone` is null.' }),
  phone: W.textOrNull({
    minLength: 1,
    maxLength: MAX.phone,
    description: 'Required (non-null) when `email` is null.',
    examples: ['+55 11 91234-5678'],
  }),
  document: W.textOrNull({ maxLength: MAX.document, description: 'CPF or CNPJ' }),
  gender: W.textOrNull({ maxLength: MAX.gender }),
  notes: W.textOrNull({ maxLength: MAX.notes }),
  birth_date: W.dateOrNull(),
  accepts_communications: W.boolean(),
  address_country: W.textOrNull({ maxLength: MAX.address_country }),
  address_state: W.textOrNull({ maxLength: MAX.address_state }),
  address_city: W.textOrNull({ maxLength: MAX.address_city }),
  address_neighborhood: W.textOrNull({ maxLength: MAX.address_neighborhood }),
  address_street: W.textOrNull({ maxLength: MAX.address_street }),
  address_number: W.textOrNull({ maxLength: MAX.address_number }),
  address_complement: W.textOrNull({ maxLength: MAX.address_complement }),
  address_zip_code: W.textOrNull({ maxLength: MAX.address_zip_code }),
  external_id: externalIdInput(),
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
    toInsert: activeFromNow,
    answersFromValues: true,
    // The contact rule reads the stored row only when the body touches the contact.
    unreadUpdate: (body) => ('email' in body || 'phone' in body ? undefined : { ...body }),
  },
};
