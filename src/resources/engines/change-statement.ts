// A PATCH or DELETE whose columns follow from its body alone (`WriteRules.unreadUpdate`) is one statement, its own
// transaction (no BEGIN or COMMIT: `WriteTransaction.sendAhead`'s `last`), in one round trip: the row locked and
// changed, its version moved on, its follow-ups (a sale's status history) and the write's tail (origin mark, write-log
// entry) written, and the record answered. The locked path (write-engine.ts `changeRow`) reads the row first, in a
// round trip of its own, and then sends its change:
// it stays for If-Match, upserts, atomic batches, external ids and the bodies whose rules need the stored row.
// With no row to change the statement fails on its own check (`unlessNoneProve`) and nothing of it commits: 404.
import { type Compilable, type CompiledQuery, type RawBuilder, sql } from 'kysely';
import type { Tenant } from '../../domain/tenant.ts';
import { hasSqlState } from '../../errors/database-errors.ts';
import { errors } from '../../errors/app-error.ts';
import { SQLSTATE } from '../../errors/sqlstate.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { beliefFailed, unlessNoneProve } from '../../infra/db/statements/belief-check.ts';
import type { FailureMeaning } from '../../infra/db/statements/send-ahead.ts';
import type { Shaped } from '../../infra/db/statements/sql-shape.ts';
import { sharedStatementCache } from '../../infra/db/statements/statement-cache.ts';
import { selectScoped, updateScoped } from '../../infra/db/tenancy/tenancy.ts';
import type { ResourceDescriptor, StatementTail } from '../descriptor.ts';
import { type ChangedColumns, setOfChanged } from './changed-columns.ts';
import { VERSION_KEY, versionSql } from './etag.ts';

/** The prefix of a stored column's value before the change, in the `changed` row a follow-up reads. */
export const BEFORE_PREFIX = 'before_';

/** A failure of the statement: no row of the tenant to change is a 404; a refused statement is told as it is. */
export const unreadChangeMeaning: FailureMeaning = (err) => (beliefFailed(err) ? errors.notFound() : err);

/**
 * Citus refuses now() over a column in an UPDATE on a distributed table (query/version.ts), as a feature it does
 * not support: once refused, a database's changes take the locked path, which works the version out beforehand.
 */
const refusedBy = new WeakSet<Db>();

export const takesUnreadChanges = (db: Db): boolean => !refusedBy.has(db);

/** Whether `err` is the database refusing the statement's form (then noted: `takesUnreadChanges` is false). */
export function refusedUnreadChange(db: Db, err: unknown): boolean {
  if (!hasSqlState(err, SQLSTATE.featureNotSupported)) return false;
  refusedBy.add(db);
  return true;
}

const OWNER = { statement: 'unread change' };

/**
 * The statement: `changed` (the UPDATE of the row by id and the resource's fixed conditions; for a follow-up that reads
 * columns as they were, joined to that row locked, with `before_<column>` for each), the follow-up and the tail's
 * CTEs, then the changed row with the tail's columns, or a failure when there was none.
 */
export function unreadChangeStatement(
  trx: Db,
  d: ResourceDescriptor,
  tenant: Tenant,
  id: string,
  changed: ChangedColumns,
  tail: Shaped<StatementTail> | undefined,
): CompiledQuery {
  const followUp = d.write?.rules?.changeFollowUp;
  const bound: unknown[] = [tenant.accountId, id, ...changed.bound];
  let key = changed.shape === null ? null : `${d.name}:${tenant.mode}${changed.shape}`;
  const tailAt = bound.length;
  if (tail) {
    bound.push(...tail.values);
    if (key !== null) key += `|${tail.key}`;
  }
  return sharedStatementCache(trx).statement(OWNER, key, 0, bound, (v) => {
    const scope: Tenant = { accountId: String(v[0]), mode: tenant.mode };
    const set = setOfChanged(changed, v, 2);
    const own = (column: string) => sql.ref(`${d.table}.${column}`);
    // One microsecond past the stored version when the transaction's time is not later (query/version.ts).
    const changes = { ...set, updated_at: sql`greatest(now(), ${own('updated_at')} + interval '1 microsecond')` };
    const before = followUp?.before ?? [];
    // The values before the change are only in a row read (and locked) beside the UPDATE, whose RETURNING sees the
    // new ones: that join is made only for a follow-up that reads them. Without it the UPDATE alone locks its row.
    const update =
      before.length === 0
        ? updateScoped(trx, d.table, scope, d.where)
            .set(changes)
            .where('id', '=', v[1])
            .returningAll()
            .returning(versionSql().as(VERSION_KEY))
        : updateScoped(trx, d.table, scope)
            .set(changes)
            .from(
              selectScoped(trx, d.table, scope, d.where)
                .select(['id', ...before.map((column) => sql.ref(column).as(`${BEFORE_PREFIX}${column}`))])
                .where('id', '=', v[1])
                .forUpdate()
                .as('target'),
            )
            .whereRef(`${d.table}.id`, '=', 'target.id')
            .returningAll(d.table)
            .returning([
              versionSql().as(VERSION_KEY),
              ...before.map((column) => sql.ref(`target.${BEFORE_PREFIX}${column}`).as(`${BEFORE_PREFIX}${column}`)),
            ]);
    const ctes: (readonly [string, RawBuilder<unknown> | Compilable])[] = [['changed', update]];
    if (followUp) ctes.push(['follow_up', followUp.sql(trx, scope)]);
    const tailSql = tail?.build(v.slice(tailAt));
    for (const cte of tailSql?.ctes ?? []) ctes.push(cte);
    const answered = [
      sql`changed.*`,
      ...(tailSql?.columns ?? []),
      unlessNoneProve(sql<number>`(SELECT count(*) FROM changed)`).as('changed_count'),
    ];
    const statement = sql`WITH ${sql.join(
      ctes.map(([name, cte]) => sql`${sql.ref(name)} AS (${cte})`),
      sql`, `,
    )} SELECT ${sql.join(answered)} FROM (SELECT 1) AS proof LEFT JOIN changed ON true`;
    return [{ compile: () => statement.compile(trx) }];
  }) as CompiledQuery;
}
