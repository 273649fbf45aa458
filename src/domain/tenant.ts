// Who a request acts for: the authenticated key with its account (AuthContext) and the tenant
// (team_id, mode) every account-owned row belongs to. Plain types, below every layer that uses them.
import type { KeyMode } from './api-keys.ts';
import type { ModuleName } from './modules.ts';
import type { PlanCode, RateLimits } from './plans.ts';

/** The authenticated key and its account, as cached by the authenticator. */
export interface AuthContext {
  keyId: string;
  keyName: string;
  keyLast4: string;
  mode: KeyMode;
  scopes: readonly string[];
  /** Scopes with their implications expanded (`customers:write` ⇒ `customers:read`). */
  granted: ReadonlySet<string>;
  allowedIps: readonly string[];
  expiresAt: Date | null;
  revoked: boolean;
  accountId: string;
  accountName: string;
  planCode: PlanCode;
  modules: readonly ModuleName[];
  apiEnabled: boolean;
  readOnly: boolean;
  /** Effective limits: the plan's with the contract's overrides (what /v1/me shows). */
  rateLimits: RateLimits;
}

/** The tenant every account-owned query is scoped to (DECISIONS B.2). */
export interface Tenant {
  accountId: string;
  mode: KeyMode;
}

/** The one spelling of a tenant as a text key (`<account>:<mode>`): in-memory maps, the events channels' payload, and
 *  what read-your-writes notes; a waiter and its waker must spell it alike. */
export const tenantKey = (tenant: Tenant): string => `${tenant.accountId}:${tenant.mode}`;

/** The tenant a stored row names (its team_id and mode), or null when they are not an account id and a key mode. */
export function tenantOfRow(accountId: unknown, mode: unknown): Tenant | null {
  if (typeof accountId !== 'string' || (mode !== 'live' && mode !== 'test')) return null;
  return { accountId, mode };
}

/** A tenant's values in the order a statement shape binds them (account, then mode), and the tenant read back from
 *  the values a shape is built with (statement-cache.ts: the real ones or its placeholders, so typed, not checked). */
export const tenantValues = (tenant: Tenant): [string, KeyMode] => [tenant.accountId, tenant.mode];
export const boundTenant = (values: readonly unknown[], at = 0): Tenant => ({
  accountId: values[at] as string,
  mode: values[at + 1] as KeyMode,
});
