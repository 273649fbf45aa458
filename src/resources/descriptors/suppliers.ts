// Suppliers (SPEC 2.4): row schema, filters and sorts of /v1/suppliers.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';
import { externalIdField } from '../engines/external-id.ts';
import { supplierWrite } from '../writes/suppliers.ts';

export const pixKey = Type.Object({ type: Type.String(), key: Type.String() }, { title: 'PixKey' });

export const supplierRow = Type.Object(
  {
    id: F.uuid(),
    name: F.textOrNull(),
    legal_name: F.textOrNull(),
    trade_name: F.textOrNull(),
    document_number: F.textOrNull({ description: 'CPF or CNPJ' }),
    email: F.textOrNull(),
    phone: F.textOrNull(),
    phone1: F.textOrNull(),
    phone2: F.textOrNull(),
    phone3: F.textOrNull(),
    rg: F.textOrNull(),
    code: F.textOrNull(),
    birth_date: F.dateOrNull(),
    is_employee: F.booleanOrNull(),
    is_active: F.booleanOrNull(),
    address_street: F.textOrNull(),
    address_number: F.textOrNull(),
    address_neighborhood: F.textOrNull(),
    address_city: F.textOrNull(),
    address_state: F.textOrNull(),
    address_country: F.textOrNull(),
    address_zip_code: F.textOrNull(),
    pix_keys: Type.Union([Type.Array(pixKey), Type.Null()]),
    external_id: externalIdField(),
    created_at: F.timestamp(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Supplier' },
);

export const suppliers: ResourceDescriptor = {
  name: 'suppliers',
  table: 'suppliers',
  import: { checked: ['email', 'pix_keys', 'external_id'] },
  module: 'fornecedores',
  row: supplierRow,
  filters: filtersFor(
    supplierRow,
    [
      'external_id',
      'name',
      'legal_name',
      'trade_name',
      'document_number',
      'email',
      'is_active',
      'is_employee',
      'address_city',
      'address_state',
      'created_at',
    ],
    { external_id: ['eq', 'in'] },
  ),
  sorts: ['created_at', 'updated_at', 'name'],
  write: supplierWrite,
};
