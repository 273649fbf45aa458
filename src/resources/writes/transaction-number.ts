// The per-tenant `transaction_number` of a new sale (DECISIONS B.6), kept in tenant_counters and
// read and written through the tenancy helper like every other account-owned statement.
import { type CompiledQuery, type Expression, sql } from 'kysely';
import { TRANSACTION_COUNTER } from '../../domain/numbering.ts';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/database.ts';
import { sameAccountSql, selectScoped, TENANT_COLUMNS, tenantValuesAs, updateScoped } from '../../infra/db/tenancy.ts';
import { sharedStatementCache } from '../../infra/db/statement-cache.ts';

/**
 * One statement that numbers a sale inserted without a number, whatever the counter's state, so it can
 * go out with the commit (sent ahead): the counter moves on and the sale takes its value. The counter row
 * stays locked until the transaction ends, so concurrent creations get consecutive numbers and a
 * rolled-back sale gives its number back. Two rare cases are settled in the same statement:
 * - a number an import stored after the counter was created is skipped: the counter jumps past the
 *   largest stored number;
 * - the tenant's first sale (no counter: `bumped` updated nothing) creates the counter just past the
 *   largest number already stored (imports); a concurrent first sale conflicts on the key, waits for
 *   this one, then takes the next value.
 * The largest stored number is a scan of the tenant's sales, so it sits where only those cases reach it
 * (a CASE branch, and a row that exists only when no counter did: PostgreSQL runs such a sub-select only
 * then). The counter is bumped by an UPDATE and created by an INSERT … SELECT, not by one INSERT …
 * ON CONFLICT with sub-selects in it, which Citus refuses (docs/scale-out.md).
 * Its one row is `transaction_number`.
 */
export function numberingStatement(trx: Db, tenant: Tenant, saleId: string): CompiledQuery {
  // One shape: built once, then only bound (src/infra/db/statement-cache.ts).
  return sharedStatementCache(trx).statement(NUMBERING, '', 0, [tenant.accountId, tenant.mode, saleId], ([accountId, mode, id]) => [
    buildNumbering(trx, { accountId, mode } as Tenant, id as string),
  ])!;
}

const NUMBERING = { statement: 'numbering' };

function buildNumbering(trx: Db, tenant: Tenant, saleId: string) {
  const largestStored = selectScoped(trx, 'transactions', tenant)
    .select(sql`coalesce(max(transaction_number::numeric), 0) + 1`.as('next'))
    .where(sql<boolean>`transaction_number ~ '^[0-9]{1,18}$'`);
  const afterLargestStored = () => sql<number>`(${largestStored})`;
  // In the UPDATE the scan is tied to the counter row, which makes it a SubPlan that runs only when its
  // CASE branch is taken. An uncorrelated one is an InitPlan, and PostgreSQL computes every InitPlan of
  // an UPDATE when it re-checks a row a concurrent transaction changed (EvalPlanQual): with sales
  // arriving together that was every sale, and a scan of all the tenant's sales each (docs/performance.md).
  const afterLargestStoredForCounter = sql<number>`(${largestStored.where(sameAccountSql('transactions', 'tenant_counters'))})`;
  const nextTaken = selectScoped(trx, 'transactions', tenant)
    .select(sql`1`.as('taken'))
    .where('transaction_number', '=', sql<string>`cast(tenant_counters.value + 1 as text)`);
  return trx
    .with('bumped', (db) =>
      updateScoped(db, 'tenant_counters', tenant)
        .set({
          value: sql`case when exists (${nextTaken})
            then greatest(tenant_counters.value + 1, ${afterLargestStoredForCounter}) else tenant_counters.value + 1 end`,
        })
        .where('name', '=', TRANSACTION_COUNTER)
        .returning('value'),
    )
    .with('created', (db) =>
      db
        .insertInto('tenant_counters')
        .columns([...TENANT_COLUMNS, 'name', 'value'])
        .expression(
          db
            .selectNoFrom([
              ...tenantValuesAs(tenant),
              sql`cast(${TRANSACTION_COUNTER} as text)`.as('name'),
              afterLargestStored().as('value'),
            ])
            .where(sql<boolean>`not exists (select 1 from bumped)`),
        )
        .onConflict((oc) => oc.columns([...TENANT_COLUMNS, 'name']).doUpdateSet({ value: sql`tenant_counters.value + 1` }))
        .returning('value'),
    )
    .with('next', (db) => db.selectFrom('bumped').select('value').unionAll(db.selectFrom('created').select('value')))
    .with('numbered', (db) =>
      updateScoped(db, 'transactions', tenant)
        .from('next')
        .set({ transaction_number: sql`cast("next"."value" as text)` })
        .where('transactions.id', '=', saleId)
        .returning('transactions.transaction_number'),
    )
    .selectFrom('numbered')
    .select('numbered.transaction_number');
}

/** The sale's number as a later statement of the numbering transaction reads it. */
export function numberOf(trx: Db, tenant: Tenant, saleId: string): Expression<string> {
  return sql<string>`(${selectScoped(trx, 'transactions', tenant).select('transaction_number').where('id', '=', saleId)})`;
}
