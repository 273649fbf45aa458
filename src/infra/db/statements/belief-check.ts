// How a statement refuses to go on when what its sender believed is not so (a sale counter this process saw, an
// idempotency claim still held): it divides by the count of rows that prove the belief, which is zero when the
// belief failed. The statement fails with SQLSTATE 22012 and nothing of its transaction commits; the sender
// reads that failure as "the belief failed" and acts on it (runs the write again, reports the claim taken over).
// One spelling for both, as the check is sent ahead and its failure read long after (send-ahead.ts).
import { type RawBuilder, sql } from 'kysely';
import { hasSqlState } from '../../../errors/database-errors.ts';
import { SQLSTATE } from '../../../errors/sqlstate.ts';

/** `1 / count`: the statement fails (`beliefFailed`) when `count`, the rows that prove the belief, is zero. */
export const unlessNoneProve = (count: RawBuilder<number>): RawBuilder<number> => sql<number>`1 / ${count}`;

/** Whether a statement failed because its `unlessNoneProve` check found no row. */
export const beliefFailed = (err: unknown): boolean => hasSqlState(err, SQLSTATE.divisionByZero);
