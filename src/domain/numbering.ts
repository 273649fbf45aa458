// Numbers the server generates (DECISIONS B.6): the per-tenant `transaction_number` counter
// and the `expense_number` of an expense created without one.
import { randomInt } from 'node:crypto';
import { sql } from 'kysely';
import type { Tenant } from './tenant.ts';
import type { Db } from '../infra/db/database.ts';

export const TRANSACTION_COUNTER = 'transaction_number';

/**
 * The next transaction number of the tenant, as a decimal string. Call it inside the
 * transaction that inserts the sale: the counter row stays locked until that transaction
 * ends, so concurrent creations get consecutive numbers and a rolled-back sale gives its
 * number back. The counter starts after the largest number already stored (imports), and
 * is moved past any number imported after it was created.
 */
export async function nextTransactionNumber(trx: Db, tenant: Tenant): Promise<string> {
  const bumped = await sql<{ value: number }>`
    UPDATE tenant_counters SET value = value + 1
    WHERE team_id = ${tenant.teamId} AND mode = ${tenant.mode} AND name = ${TRANSACTION_COUNTER}
    RETURNING value`.execute(trx);
  let value = bumped.rows[0]?.value;
  if (value === undefined) {
    // First sale of the tenant: seed from what is stored. A concurrent first sale conflicts on
    // the key, waits for this transaction, then takes the next value.
    const seeded = await sql<{ value: number }>`
      INSERT INTO tenant_counters (team_id, mode, name, value)
      VALUES (${tenant.teamId}, ${tenant.mode}, ${TRANSACTION_COUNTER}, ${String((await largestStoredNumber(trx, tenant)) + 1)}::bigint)
      ON CONFLICT (team_id, mode, name) DO UPDATE SET value = tenant_counters.value + 1
      RETURNING value`.execute(trx);
    value = seeded.rows[0]?.value as number;
  }
  if (await numberTaken(trx, tenant, value)) {
    const moved = await sql<{ value: number }>`
      UPDATE tenant_counters SET value = GREATEST(value, ${String((await largestStoredNumber(trx, tenant)) + 1)}::bigint)
      WHERE team_id = ${tenant.teamId} AND mode = ${tenant.mode} AND name = ${TRANSACTION_COUNTER}
      RETURNING value`.execute(trx);
    value = moved.rows[0]?.value as number;
  }
  return String(value);
}

/** The largest purely numeric transaction_number of the tenant (any transaction type), or 0. */
async function largestStoredNumber(trx: Db, tenant: Tenant): Promise<number> {
  const result = await sql<{ largest: number | null }>`
    SELECT MAX(transaction_number::numeric) AS largest FROM transactions
    WHERE team_id = ${tenant.teamId} AND mode = ${tenant.mode} AND transaction_number ~ '^[0-9]{1,18}$'`.execute(trx);
  return Number(result.rows[0]?.largest ?? 0);
}

/** One index probe: only an import made after the counter existed can hit this. */
async function numberTaken(trx: Db, tenant: Tenant, value: number): Promise<boolean> {
  const result = await sql`
    SELECT 1 FROM transactions
    WHERE team_id = ${tenant.teamId} AND mode = ${tenant.mode} AND transaction_number = ${String(value)} LIMIT 1`.execute(trx);
  return result.rows.length > 0;
}

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** `API-<unix milliseconds>-<6 random base36 characters>`. */
export function generateExpenseNumber(now: number = Date.now()): string {
  let suffix = '';
  for (let i = 0; i < 6; i++) suffix += BASE36[randomInt(36)];
  return `API-${now}-${suffix}`;
}
