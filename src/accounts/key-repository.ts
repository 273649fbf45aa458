// API keys: creation under the plan's simultaneous-key limit, revocation, listing, and the
// lookup by hash that authentication uses. Secrets are never stored or listed.
import { type Selectable, sql } from 'kysely';
import { generateApiKey, type KeyMode } from '../domain/api-keys.ts';
import { PLANS } from '../domain/plans.ts';
import type { Db } from '../infra/db/engine/database.ts';
import type { ApiKeys } from '../infra/db/engine/tables.ts';
import type { AccountRow } from './account-repository.ts';

export type KeyRow = Selectable<ApiKeys>;

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
    expires_at: row.expires_at,
    allowed_ips: row.allowed_ips,
    revoked_at: row.revoked_at,
    created_at: row.created_at,
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
  // Inside the caller's transaction when given one (the CLI writes its audit entry in the same transaction).
  const inTransaction = <T>(fn: (tx: Db) => Promise<T>): Promise<T> => (db.isTransaction ? fn(db) : db.transaction().execute(fn));
  return inTransaction(async (tx) => {
    // The account row lock serializes concurrent creations for one account.
    const account = await tx.selectFrom('accounts').selectAll().where('id', '=', input.accountId).forUpdate().executeTakeFirst();
    if (!account) throw new KeyLimitError(`account ${input.accountId} does not exist`);
    const limit = PLANS[account.plan_code].simultaneousKeys;
    const { active } = await tx
      .selectFrom('api_keys')
      .select(sql<number>`count(*)`.as('active'))
      .where('account_id', '=', input.accountId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date().toISOString())]))
      .executeTakeFirstOrThrow();
    const willBeActive = input.expiresAt === null || input.expiresAt > new Date();
    if (willBeActive && Number(active) >= limit) {
      throw new KeyLimitError(
        `the ${account.plan_code} plan allows ${limit} simultaneous key${limit === 1 ? '' : 's'} and account ${account.id} already has ${active}; revoke one first or change the plan`,
      );
    }
    const generated = generateApiKey(input.brand, input.mode);
    const row = await tx
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
      .executeTakeFirstOrThrow();
    return { row, key: generated.key };
  });
}

export async function getKey(db: Db, id: string): Promise<KeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function revokeKey(db: Db, id: string): Promise<KeyRow | undefined> {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listKeys(db: Db, accountId: string): Promise<KeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}

/** The key and its account in one round trip, for authentication. */
export async function findKeyWithAccount(db: Db, hash: string): Promise<{ key: KeyRow; account: AccountRow } | undefined> {
  return (await findKeysWithAccounts(db, [hash])).get(hash);
}

/** The keys of these hashes with their accounts, in one round trip, by hash: a hash of no key is absent. */
export async function findKeysWithAccounts(db: Db, hashes: readonly string[]): Promise<Map<string, { key: KeyRow; account: AccountRow }>> {
  const found = new Map<string, { key: KeyRow; account: AccountRow }>();
  if (hashes.length === 0) return found;
  const rows = await db
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
    .where(
      hashes.length === 1 ? sql<boolean>`k.secret_hash = ${hashes[0]}` : sql<boolean>`k.secret_hash = ANY(cast(${[...hashes]} as text[]))`,
    )
    .execute();
  for (const row of rows) {
    found.set(row.secret_hash, {
      key: {
        id: row.id,
        account_id: row.account_id,
        name: row.name,
        mode: row.mode,
        secret_hash: row.secret_hash,
        last4: row.last4,
        scopes: row.scopes,
        allowed_ips: row.allowed_ips,
        expires_at: row.expires_at,
        revoked_at: row.revoked_at,
        created_at: row.created_at,
      },
      account: {
        id: row.account_id,
        name: row.account_name,
        plan_code: row.plan_code,
        modules: row.modules,
        api_enabled: row.api_enabled,
        read_only: row.read_only,
        burst_per_second: row.burst_per_second,
        requests_per_minute_read: row.requests_per_minute_read,
        requests_per_minute_write: row.requests_per_minute_write,
        requests_per_day_total: row.requests_per_day_total,
        is_demo: row.is_demo,
        created_at: row.account_created_at,
        updated_at: row.account_updated_at,
      },
    });
  }
  return found;
}
