// Expenses (SPEC 2.3): row schema, filters, sorts and the `recurring` include of /v1/expenses.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import { generateExpenseNumber } from '../../domain/numbering.ts';
import type { ResourceDescriptor } from '../descriptor.ts';
import { externalIdField } from '../engines/external-id.ts';
import { expenseWrite } from '../writes/expenses.ts';

export const expenseRow = Type.Object(
  {
    id: F.uuid(),
    expense_number: F.text(),
    expense_type: F.text(),
    description: F.text(),
    original_amount: F.number(),
    discount_amount: F.numberOrNull(),
    final_amount: F.number(),
    category_id: F.uuidOrNull(),
    subcategory_id: F.uuidOrNull(),
    cost_center_id: F.uuidOrNull(),
    supplier_id: F.uuidOrNull(),
    bank_account_id: F.uuidOrNull(),
    credit_card_id: F.uuidOrNull(),
    payment_method: F.textOrNull({ examples: ['pix'] }),
    check_number: F.textOrNull(),
    installments: F.integerOrNull(),
    status: F.textOrNull({ examples: ['pending'] }),
    payment_date: F.dateOrNull(),
    due_date: F.dateOrNull(),
    notes: F.textOrNull(),
    tags: F.textArrayOrNull(),
    is_recurring: F.booleanOrNull(),
    is_active: F.booleanOrNull(),
    payment_reference: F.textOrNull(),
    recurring_expense_id: F.uuidOrNull(),
    installment_number: F.integerOrNull(),
    total_installments: F.integerOrNull(),
    external_id: externalIdField(),
    created_at: F.timestamp(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Expense' },
);

export const recurringExpenseRow = Type.Object(
  {
    id: F.uuid(),
    expense_template_id: F.uuid(),
    recurrence_frequency: F.text({ examples: ['monthly'] }),
    recurrence_interval: F.integer(),
    start_date: F.date(),
    end_date: F.dateOrNull(),
    next_generation_date: F.date(),
    last_generated_expense_id: F.uuidOrNull(),
    is_active: F.booleanOrNull(),
    created_at: F.timestamp(),
  },
  { title: 'RecurringExpense' },
);

export const expenses: ResourceDescriptor = {
  name: 'expenses',
  table: 'expenses',
  import: {
    defaults: { expense_number: () => generateExpenseNumber() },
    checked: ['external_id'],
    alongside: { recurring_expenses: { table: 'recurring_expenses' } },
  },
  module: 'despesas',
  row: expenseRow,
  filters: filtersFor(
    expenseRow,
    [
      'external_id',
      'expense_number',
      'expense_type',
      'description',
      'category_id',
      'subcategory_id',
      'cost_center_id',
      'supplier_id',
      'payment_method',
      'bank_account_id',
      'credit_card_id',
      'status',
      'payment_date',
      'due_date',
      'is_recurring',
      'is_active',
      'created_at',
    ],
    { external_id: ['eq', 'in'] },
  ),
  sorts: ['created_at', 'updated_at', 'payment_date', 'due_date'],
  write: expenseWrite,
  includes: {
    recurring: { table: 'recurring_expenses', cardinality: 'one', foreignKey: 'recurring_expense_id', item: recurringExpenseRow },
  },
};
