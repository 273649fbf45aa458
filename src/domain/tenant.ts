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
