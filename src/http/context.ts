// What the pipeline attaches to a request (the AuthContext and Tenant of domain/tenant.ts), and what
// each route declares about itself.
import type { ModuleName } from '../domain/modules.ts';
import type { Access, ScopeResource } from '../domain/scopes.ts';
import type { AuthContext, Tenant } from '../domain/tenant.ts';

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
