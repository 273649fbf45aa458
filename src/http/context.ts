// What the pipeline attaches to a request, and what each route declares about itself.
import type { KeyMode } from '../domain/api-keys.ts';
import type { ModuleName } from '../domain/modules.ts';
import type { PlanCode, RateLimits } from '../domain/plans.ts';
import type { Access, ScopeResource } from '../domain/scopes.ts';

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
  teamId: string;
  mode: KeyMode;
}

/** Declared by every route in its Fastify `config`. */
export interface RouteConfig {
  /** Stable id: `customers.list`, `sales.create`, `me.get` (OpenAPI, logs, rate-limit class). */
  operationId: string;
  /** No authentication (openapi.json, docs, error pages, health). */
  public?: boolean;
  /** Scope and module the guard checks; absent for /v1/me. */
  resource?: ScopeResource;
  access?: Access;
  module?: ModuleName;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    tenant: Tenant | null;
  }
  interface FastifyContextConfig extends Partial<RouteConfig> {}
}
