// The operator audit log (migration 010): who ran which `balcao` command on what, and what it changed. Written by
// the commands that change accounts, keys or a customer's personal data, in their own transaction; read by
// `balcao audit list`. Append-only: nothing here changes or deletes an entry, and the database refuses it too.
// An entry's `changes` names fields and their values, never a secret, a key or a fragment of one.
import os from 'node:os';
import { sql } from 'kysely';
import type { Db } from '../infra/db/engine/database.ts';

export type AuditTargetType = 'account' | 'api_key' | 'customer';

/** A field's value before and after the command (`from` is null on a creation). */
export type FieldChange = { from: unknown; to: unknown };

export interface AuditInput {
  actor: string;
  /** The command as typed, without its arguments' values: `accounts update`, `keys revoke`, … */
  command: string;
  accountId: string | null;
  targetType: AuditTargetType;
  targetId: string | null;
  changes: Record<string, unknown>;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  command: string;
  account_id: string | null;
  target_type: string;
  target_id: string | null;
  changes: Record<string, unknown>;
}

/** The operator: --actor, else BALCAO_ACTOR (Config.operatorActor), else the OS user running the command. */
export function operatorName(flag: string | undefined, configured: string | undefined): string {
  const named = flag?.trim() || configured?.trim();
  if (named) return named;
  try {
    return os.userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** The fields of `after` whose value differs from `before` (all of them when there is no `before`). */
export function changedFields<T extends object>(
  before: T | undefined,
  after: T,
  fields: readonly (keyof T & string)[],
): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  for (const field of fields) {
    const from = before === undefined ? null : (before[field] ?? null);
    const to = after[field] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[field] = { from, to };
  }
  return changes;
}

export async function recordAudit(db: Db, input: AuditInput): Promise<void> {
  await db
    .insertInto('operator_audit')
    .values({
      actor: input.actor,
      command: input.command,
      account_id: input.accountId,
      target_type: input.targetType,
      target_id: input.targetId,
      // Sent as text: a jsonb parameter would be encoded once more by postgres.js (a JSON string, not an object).
      changes: sql`cast(cast(${JSON.stringify(input.changes)} as text) as jsonb)`,
    })
    .execute();
}

/** Entries in the order they were written, optionally of one account and from a time on. */
export async function listAudit(db: Db, filter: { accountId?: string; since?: Date } = {}): Promise<AuditEntry[]> {
  let query = db
    .selectFrom('operator_audit')
    .select(['id', 'at', 'actor', 'command', 'account_id', 'target_type', 'target_id', sql<string>`changes::text`.as('changes_text')])
    .orderBy('at')
    .orderBy('id');
  if (filter.accountId) query = query.where('account_id', '=', filter.accountId);
  if (filter.since) query = query.where('at', '>=', filter.since.toISOString());
  const rows = await query.execute();
  return rows.map(({ changes_text, ...row }) => ({ ...row, changes: JSON.parse(changes_text) as Record<string, unknown> }));
}
