// Bank accounts (SPEC 2.7): row schema, filters and sorts of /v1/bank-accounts.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const bankAccountRow = Type.Object(
  {
    id: F.uuid(),
    account_name: F.text(),
    bank_name: F.textOrNull(),
    agency_number: F.textOrNull(),
    account_number: F.textOrNull(),
    account_type: F.textOrNull({ examples: ['checking'] }),
    currency: F.textOrNull({ examples: ['BRL'] }),
    initial_balance: F.numberOrNull(),
    current_balance: F.numberOrNull({ description: 'Calculated' }),
    is_active: F.booleanOrNull(),
    archived: F.boolean(),
    notes: F.textOrNull(),
    created_at: F.timestampOrNull(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'BankAccount' },
);

export const bankAccounts: ResourceDescriptor = {
  name: 'bank-accounts',
  table: 'bank_accounts',
  module: 'contas_bancarias',
  row: bankAccountRow,
  filters: filtersFor(bankAccountRow, ['account_name', 'is_active', 'archived']),
  sorts: ['created_at', 'updated_at', 'account_name'],
};
