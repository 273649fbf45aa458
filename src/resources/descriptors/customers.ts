// Customers (SPEC 2.1, DECISIONS B.3): row schema, filters and sorts of /v1/customers.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';
import { externalIdField } from '../engines/external-id.ts';
import { customerWrite } from '../writes/customers.ts';

export const customerRow = Type.Object(
  {
    id: F.uuid(),
    full_name: F.text(),
    email: F.textOrNull({ description: 'E-mail address' }),
    phone: F.textOrNull(),
    document: F.textOrNull({ description: 'CPF or CNPJ' }),
    birth_date: F.dateOrNull(),
    notes: F.textOrNull(),
    is_active: F.booleanOrNull(),
    gender: F.textOrNull(),
    address_country: F.textOrNull(),
    address_state: F.textOrNull(),
    address_city: F.textOrNull(),
    address_neighborhood: F.textOrNull(),
    address_street: F.textOrNull(),
    address_number: F.textOrNull(),
    address_complement: F.textOrNull(),
    address_zip_code: F.textOrNull(),
    accepts_communications: F.booleanOrNull(),
    valid_whatsapp: F.booleanOrNull(),
    profile_photo_url: F.textOrNull(),
    whatsapp_photo: F.textOrNull(),
    external_id: externalIdField(),
    created_at: F.timestamp(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Customer' },
);

export const customers: ResourceDescriptor = {
  name: 'customers',
  table: 'customers',
  import: { checked: ['email', 'external_id'] },
  module: 'clientes',
  row: customerRow,
  filters: filtersFor(
    customerRow,
    [
      'external_id',
      'full_name',
      'email',
      'phone',
      'document',
      'is_active',
      'gender',
      'accepts_communications',
      'address_city',
      'address_state',
      'created_at',
      'updated_at',
    ],
    { external_id: ['eq', 'in'] },
  ),
  sorts: ['created_at', 'updated_at', 'full_name'],
  write: customerWrite,
};
