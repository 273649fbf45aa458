// Writes of /v1/expenses (SPEC 2.3): required fields on creation, a generated expense_number
// when omitted, exact cents, and the references (supplier, bank account) inside the tenant.
// installment_number, total_installments, is_recurring and recurring_expense_id belong to the
// platform's recurrences and are never written from a body.
import { type Static, Type } from '@sinclair/typebox';
import { money } from '../../domain/money.ts';
import { generateExpenseNumber } from '../../domain/numbering.ts';
import type { Body, WriteDescriptor } from '../descriptor.ts';
import { TEXT_BOUNDS } from '../../schemas/bounds.ts';
import { optional, partialOf, W } from './fields.ts';
import { externalIdInput } from '../engines/external-id.ts';

const MAX = TEXT_BOUNDS.expenses;

const requiredOnCreate = {
  expense_type: W.text({ minLength: 1, maxLength: MAX.expense_type, examples: ['fixed'] }),
  description: W.text({ minLength: 1, maxLength: MAX.description }),
  original_amount: W.money({ examples: [150.5] }),
  final_amount: W.money({ examples: [140.5] }),
};

const optionalFields = {
  expense_number: W.text({
    minLength: 1,
    maxLength: MAX.expense_number,
    description: 'Generated as `API-<unix ms>-<6 base36>` when omitted.',
  }),
  discount_amount: W.moneyOrNull(),
  category_id: W.uuidOrNull(),
  subcategory_id: W.uuidOrNull(),
  cost_center_id: W.uuidOrNull(),
  supplier_id: W.uuidOrNull({ description: 'A supplier of the account.' }),
  bank_account_id: W.uuidOrNull({ description: 'A bank account of the account.' }),
  credit_card_id: W.uuidOrNull(),
  payment_method: W.textOrNull({ maxLength: MAX.payment_method, examples: ['pix'] }),
  check_number: W.textOrNull({ maxLength: MAX.check_number }),
  installments: W.positiveIntegerOrNull(),
  status: W.textOrNull({ maxLength: MAX.status, examples: ['pending'] }),
  payment_date: W.dateOrNull(),
  due_date: W.dateOrNull(),
  notes: W.textOrNull({ maxLength: MAX.notes }),
  tags: W.textArrayOrNull({ itemMaxLength: MAX.tag }),
  payment_reference: W.textOrNull({ maxLength: MAX.payment_reference }),
  external_id: externalIdInput(),
};

export const CreateExpenseInput = Type.Object({ ...requiredOnCreate, ...optional(optionalFields) }, { title: 'CreateExpenseInput' });

export const UpdateExpenseInput = partialOf({ ...requiredOnCreate, ...optionalFields }, { title: 'UpdateExpenseInput' });

export type CreateExpense = Static<typeof CreateExpenseInput>;

const AMOUNTS = ['original_amount', 'discount_amount', 'final_amount'] as const;

/** Amounts as exact decimal text rounded half-up to cents (a JSON 0.1 is stored as 0.10). */
function exactAmounts(body: Body): Body {
  const out = { ...body };
  for (const field of AMOUNTS) {
    const value = out[field];
    if (typeof value === 'number') out[field] = money(value).toFixed(2);
  }
  return out;
}

export const expenseWrite: WriteDescriptor = {
  create: CreateExpenseInput,
  update: UpdateExpenseInput,
  softDelete: { is_active: false },
  references: { supplier_id: 'suppliers', bank_account_id: 'bank_accounts' },
  rules: {
    toInsert: (ctx, body) => ({
      ...exactAmounts(body),
      expense_number: body.expense_number ?? generateExpenseNumber(ctx.now()),
      is_active: true,
      is_recurring: false,
    }),
    toUpdate: (_ctx, body) => exactAmounts(body),
    unreadUpdate: exactAmounts,
  },
};
