// The per-tenant `transaction_number` of a new sale (DECISIONS B.6), kept in tenant_counters and
// read and written through the tenancy helper like every other account-owned statement.
import { type SqlBool, sql } from 'kysely';
import { TRANSACTION_COUNTER } from '../../domain/numbering.ts';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/database.ts';
import { insertScoped, selectScoped, updateScoped } from '../../infra/db/tenancy.ts';

const bigint = (value: number) => sql<number>`cast(${String(value)} as bigint)`;

/**
 * The next transaction number of the tenant, as a decimal string. Call it inside the
 * transaction that inserts the sale: the counter row stays locked until that transaction
 * ends, so concurrent creations get consecutive numbers and a rolled-back sale gives its
 * number back. The counter starts after the largest number already stored (imports), and
 * is moved past any number imported after it was created.
 */
const counter = (trx: Db, tenant: Tenant) =>
  updateScoped(trx, 'tenant_counters', tenant).where('name', '=', TRANSACTION_COUNTER).returning('value');

export async function nextTransactionNumber(trx: Db, tenant: Tenant): Promise<string> {
  let value = (await counter(trx, tenant).set({ value: sql`value + 1` }).executeTakeFirst())?.value as number | undefined;
  if (value === undefined) {
    // First sale of the tenant: seed from what is stored. A concurrent first sale conflicts on
    // the key, waits for this transaction, then takes the next value.
    const seeded = await insertScoped(trx, 'tenant_counters', tenant, {
      name: TRANSACTION_COUNTER,
      value: bigint((await largestStoredNumber(trx, tenant)) + 1),
    })
      .onConflict((oc) => oc.columns(['team_id', 'mode', 'name']).doUpdateSet({ value: sql`tenant_counters.value + 1` }))
      .returning('value')
      .executeTakeFirst();
    value = seeded?.value as number;
  }
  if (await numberTaken(trx, tenant, value)) {
    const floor = bigint((await largestStoredNumber(trx, tenant)) + 1);
    value = (
      await counter(trx, tenant)
        .set({ value: sql`GREATEST(value, ${floor})` })
        .executeTakeFirst()
    )?.value as number;
  }
  return String(value);
}

/**
 * Numbers a sale inserted without one, in one statement in the usual case: the counter moves on
 * and the sale takes its value unless a stored sale has it already. Otherwise (the tenant's first
 * sale, or a number an import took) `nextTransactionNumber` decides. The counter stays locked until
 * the transaction ends, so call it as late as possible (WriteRules.lastValues).
 */
export async function numberSale(trx: Db, tenant: Tenant, saleId: string): Promise<string> {
  const asText = sql<string>`cast("next"."value" as text)`;
  // `value` says whether the counter existed (and this statement moved it), `number` whether the sale took it.
  const result = await trx
    .with('next', (db) =>
      updateScoped(db, 'tenant_counters', tenant).where('name', '=', TRANSACTION_COUNTER).set({ value: sql`value + 1` }).returning('value'),
    )
    .with('numbered', (db) =>
      updateScoped(db, 'transactions', tenant)
        .from('next')
        .set({ transaction_number: asText })
        .where('transactions.id', '=', saleId)
        .where(({ not, exists }) =>
          not(exists(selectScoped(trx, 'transactions', tenant).select(sql`1`.as('taken')).where('transaction_number', '=', asText))),
        )
        .returning('transactions.transaction_number'),
    )
    .selectFrom('next')
    .leftJoin('numbered', (join) => join.onTrue())
    .select(['next.value', 'numbered.transaction_number'])
    .executeTakeFirst();
  if (result?.transaction_number != null) return String(result.transaction_number);
  let value: string;
  if (result) {
    // This statement moved the counter to a number an import took: past the largest stored one, as below.
    const floor = bigint((await largestStoredNumber(trx, tenant)) + 1);
    value = String(
      (
        await counter(trx, tenant)
          .set({ value: sql`GREATEST(value, ${floor})` })
          .executeTakeFirstOrThrow()
      ).value,
    );
  } else {
    // No counter when the statement began (the tenant's first sale, or another's first sale not yet committed).
    value = await nextTransactionNumber(trx, tenant);
  }
  await updateScoped(trx, 'transactions', tenant).set({ transaction_number: value }).where('id', '=', saleId).execute();
  return value;
}

/** The largest purely numeric transaction_number of the tenant (any transaction type), or 0. */
async function largestStoredNumber(trx: Db, tenant: Tenant): Promise<number> {
  const result = await selectScoped(trx, 'transactions', tenant)
    .select(sql<number | null>`MAX(transaction_number::numeric)`.as('largest'))
    .where(sql<SqlBool>`transaction_number ~ '^[0-9]{1,18}$'`)
    .executeTakeFirst();
  return Number(result?.largest ?? 0);
}

/** One index probe: only an import made after the counter existed can hit this. */
async function numberTaken(trx: Db, tenant: Tenant, value: number): Promise<boolean> {
  const found = await selectScoped(trx, 'transactions', tenant)
    .select(sql`1`.as('taken'))
    .where('transaction_number', '=', String(value))
    .limit(1)
    .executeTakeFirst();
  return found !== undefined;
}
