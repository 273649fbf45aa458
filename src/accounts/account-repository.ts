// Accounts (the contract: plan, modules, API switch, read-only rule, rate-limit overrides).
import { MODULES, type ModuleName } from '../domain/modules.ts';
import { effectiveRateLimits, type PlanCode, type RateLimitOverrides, type RateLimits } from '../domain/plans.ts';
import type { Selectable, Updateable } from 'kysely';
import type { Db } from '../infra/db/engine/database.ts';
import type { Accounts } from '../infra/db/engine/tables.ts';

export type AccountRow = Selectable<Accounts>;

/** What the operator sees (`balcao accounts … --json`). */
export interface AccountView {
  id: string;
  name: string;
  plan_code: PlanCode;
  modules: ModuleName[];
  api_enabled: boolean;
  read_only: boolean;
  rate_limits: RateLimits;
}

export interface AccountInput {
  name?: string;
  plan_code?: PlanCode;
  modules?: ModuleName[];
  api_enabled?: boolean;
  read_only?: boolean;
  rate_limit_overrides?: Partial<RateLimitOverrides>;
  is_demo?: boolean;
}

export const overridesOf = (row: AccountRow): RateLimitOverrides => ({
  burst_per_second: row.burst_per_second,
  requests_per_minute_read: row.requests_per_minute_read,
  requests_per_minute_write: row.requests_per_minute_write,
  requests_per_day_total: row.requests_per_day_total,
});

/** Modules in the canonical order of SPEC part 1, whatever order they were given in. */
const canonicalModules = (modules: readonly ModuleName[]): ModuleName[] => MODULES.filter((m) => modules.includes(m));

export function toAccountView(row: AccountRow): AccountView {
  return {
    id: row.id,
    name: row.name,
    plan_code: row.plan_code,
    modules: canonicalModules(row.modules),
    api_enabled: row.api_enabled,
    read_only: row.read_only,
    rate_limits: effectiveRateLimits(row.plan_code, overridesOf(row)),
  };
}

export async function createAccount(db: Db, input: AccountInput & { name: string }): Promise<AccountRow> {
  return insertAccount(db, input).executeTakeFirstOrThrow();
}

/** The INSERT of a new account, returning its row (the demo runs it inside its import's transaction). */
export function insertAccount(db: Db, input: AccountInput & { name: string }) {
  return db
    .insertInto('accounts')
    .values({
      name: input.name,
      plan_code: input.plan_code ?? 'free',
      modules: canonicalModules(input.modules ?? []),
      api_enabled: input.api_enabled ?? true,
      read_only: input.read_only ?? false,
      is_demo: input.is_demo ?? false,
      ...(input.rate_limit_overrides ?? {}),
    })
    .returningAll();
}

export async function updateAccount(db: Db, id: string, input: AccountInput): Promise<AccountRow | undefined> {
  const changes: Updateable<Accounts> = { ...(input.rate_limit_overrides ?? {}), updated_at: new Date() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.plan_code !== undefined) changes.plan_code = input.plan_code;
  if (input.modules !== undefined) changes.modules = canonicalModules(input.modules);
  if (input.api_enabled !== undefined) changes.api_enabled = input.api_enabled;
  if (input.read_only !== undefined) changes.read_only = input.read_only;
  return db.updateTable('accounts').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function getAccount(db: Db, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listAccounts(db: Db): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function findDemoAccount(db: Db): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('is_demo', '=', true).orderBy('created_at').executeTakeFirst();
}
