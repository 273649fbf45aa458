// What the document needs to know about a route beyond its schema: whether it is documented at
// all, whether it authenticates, and what it can fail with. Derived from the route's config and
// schema as declared, so a new route is described without touching this folder.
import type { RouteOptions } from 'fastify';
import type { RouteConfig } from '../http/context.ts';
import type { DeprecationNotice } from '../http/deprecation.ts';

export interface RouteFacts {
  operationId: string;
  method: string;
  /** Fastify path (`/v1/customers/:id`). */
  url: string;
  /** No authentication and no per-key rate limit (openapi.json, error pages); under /v1 the anonymous per-IP limit applies. */
  public: boolean;
  resource?: string;
  access?: string;
  module?: string;
  hasQuery: boolean;
  hasBody: boolean;
  hasParams: boolean;
  deprecated?: DeprecationNotice;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served but left out of the OpenAPI document (assets, test-only routes). */
    hidden?: boolean;
  }
}

type RouteLike = Pick<RouteOptions, 'method' | 'url' | 'schema'> & {
  config?: Partial<RouteConfig> & { hidden?: boolean; deprecated?: DeprecationNotice };
};

/** Undocumented: routes without an operation id (internal), marked `hidden`, or with `schema.hide`. */
export function isDocumented(route: RouteLike): boolean {
  const schema = route.schema as { hide?: boolean } | undefined;
  return Boolean(route.config?.operationId) && !route.config?.hidden && !schema?.hide;
}

export function routeFacts(route: RouteLike, method: string): RouteFacts {
  const config = route.config ?? {};
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  return {
    operationId: config.operationId as string,
    method: method.toUpperCase(),
    url: route.url,
    public: Boolean(config.public),
    resource: config.resource,
    access: config.access,
    module: config.module,
    hasQuery: schema.querystring !== undefined,
    hasBody: schema.body !== undefined,
    hasParams: schema.params !== undefined || route.url.includes(':'),
    deprecated: config.deprecated,
  };
}
