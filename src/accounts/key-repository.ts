// API keys: creation under the plan's simultaneous-key limit, revocation, listing, and the
// lookup by hash that authentication uses. Secrets are never stored or listed.
import { sql } from 'kysely';
import { generateApiKey, type KeyMode } from '../domain/api-keys.ts';
import { PLANS } from '../domain/plans.ts';
import type { Db } from '../infra/db/database.ts';
import type { AccountRow } from './account-repository.ts';

export interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  mode: KeyMode;
  secret_hash: string;
  last4: string;
  scopes: string[];
  allowed_ips: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

/** What the operator sees (`balcao keys … --json`); `key` only at creation. */
export interface KeyView {
  id: string;
  account_id: string;
  name: string;
  prefix: KeyMode;
  last4: string;
  scopes: string[];
  expires_at: string | null;
  allowed_ips: string[];
  revoked_at: string | null;
  created_at: string;
}

export class KeyLimitError extends Error {}

export function toKeyView(row: KeyRow): KeyView {
  return {
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    prefix: row.mode,
    last4: row.last4,
    scopes: row.scopes,
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    allowed_ips: row.allowed_ips,
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  };
}

export interface CreateKeyInput {
  accountId: string;
  name: string;
  mode: KeyMode;
  scopes: string[];
  allowedIps: string[];
  expiresAt: Date | null;
  brand: string;
}

/** Creates a key; refuses beyond the plan's simultaneous keys (revoked and expired keys do not count). */
export async function createKey(db: Db, input: CreateKeyInput): Promise<{ row: KeyRow; key: string }> {
  return db.transaction().execute(async (tx) => {
    // The account row lock serializes concurrent creations for one account.
    const account = (await tx.selectFrom('accounts').selectAll().where('id', '=', input.accountId).forUpdate().executeTakeFirst()) as
      | AccountRow
      | undefined;
    if (!account) throw new KeyLimitError(`account ${input.accountId} does not exist`);
    const limit = PLANS[account.plan_code].simultaneousKeys;
    const { active } = (await tx
      .selectFrom('api_keys')
      .select(sql<number>`count(*)`.as('active'))
      .where('account_id', '=', input.accountId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
      .executeTakeFirstOrThrow()) as { active: number };
    const willBeActive = input.expiresAt === null || input.expiresAt > new Date();
    if (willBeActive && Number(active) >= limit) {
      throw new KeyLimitError(
        `the ${account.plan_code} plan allows ${limit} simultaneous key${limit === 1 ? '' : 's'} and account ${account.id} already has ${active}; revoke one first or change the plan`,
      );
    }
    const generated = generateApiKey(input.brand, input.mode);
    const row = (await tx
      .insertInto('api_keys')
      .values({
        account_id: input.accountId,
        name: input.name,
        mode: input.mode,
        secret_hash: generated.hash,
        last4: generated.last4,
        scopes: input.scopes,
        allowed_ips: input.allowedIps,
        expires_at: input.expiresAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow()) as KeyRow;
    return { row, key: generated.key };
  });
}

export async function revokeKey(db: Db, id: string): Promise<KeyRow | undefined> {
  return (await db
    .updateTable('api_keys')
    .set({ revoked_at: sql`coalesce(revoked_at, now())` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()) as KeyRow | undefined;
}

export async function listKeys(db: Db, accountId: string): Promise<KeyRow[]> {
  return (await db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute()) as KeyRow[];
}

/** The key and its account in one round trip, for authentication. */
export async function findKeyWithAccount(db: Db, hash: string): Promise<{ key: KeyRow; account: AccountRow } | undefined> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .select([
      'k.id',
      'k.account_id',
      'k.name',
      'k.mode',
      'k.secret_hash',
      'k.last4',
      'k.scopes',
      'k.allowed_ips',
      'k.expires_at',
      'k.revoked_at',
      'k.created_at',
      'a.name as account_name',
      'a.plan_code',
      'a.modules',
      'a.api_enabled',
      'a.read_only',
      'a.burst_per_second',
      'a.requests_per_minute_read',
      'a.requests_per_minute_write',
      'a.requests_per_day_total',
      'a.is_demo',
      'a.created_at as account_created_at',
      'a.updated_at as account_updated_at',
    ])
    .where('k.secret_hash', '=', hash)
    .executeTakeFirst();
  if (!row) return undefined;
  const r = row as Record<string, unknown>;
  return {
    key: {
      id: r.id as string,
      account_id: r.account_id as string,
      name: r.name as string,
      mode: r.mode as KeyMode,
      secret_hash: r.secret_hash as string,
      last4: r.last4 as string,
      scopes: r.scopes as string[],
      allowed_ips: r.allowed_ips as string[],
      expires_at: r.expires_at as Date | null,
      revoked_at: r.revoked_at as Date | null,
      created_at: r.created_at as Date,
    },
    account: {
      id: r.account_id as string,
      name: r.account_name as string,
      plan_code: r.plan_code as AccountRow['plan_code'],
      modules: r.modules as AccountRow['modules'],
      api_enabled: r.api_enabled as boolean,
      read_only: r.read_only as boolean,
      burst_per_second: r.burst_per_second as number | null,
      requests_per_minute_read: r.requests_per_minute_read as number | null,
      requests_per_minute_write: r.requests_per_minute_write as number | null,
      requests_per_day_total: r.requests_per_day_total as number | null,
      is_demo: r.is_demo as boolean,
      created_at: r.account_created_at as Date,
      updated_at: r.account_updated_at as Date | null,
    },
  };
}
