// Numbers the server generates (DECISIONS B.6): the name of the per-tenant `transaction_number`
// counter (resources/writes/transaction-number.ts keeps it) and the `expense_number` of an
// expense created without one.
import { randomInt } from 'node:crypto';

/** The tenant_counters row of sale numbers. */
export const TRANSACTION_COUNTER = 'transaction_number';

/** The tenant_counters row of event sequence numbers; it also says whether the tenant has webhook endpoints. */
export const EVENTS_COUNTER = 'events';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** `API-<unix milliseconds>-<6 random base36 characters>`. */
export function generateExpenseNumber(now: number = Date.now()): string {
  let suffix = '';
  for (let i = 0; i < 6; i++) suffix += BASE36[randomInt(36)];
  return `API-${now}-${suffix}`;
}
