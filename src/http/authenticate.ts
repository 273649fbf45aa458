// Authentication, rate limiting and the guard, in the order of SPEC 5.7:
//   malformed/unknown key → 401 invalid_token; revoked → token_revoked; expired → token_expired;
//   caller outside the key's IP list → 403 ip_not_allowed   (all of these: charged to the client IP)
//   then the key is authenticated and every request counts against its limits (SPEC 8),
//   then the account: API disabled → api_disabled; then the route's scope (read-only plans
//   refuse writes) → insufficient_scope; then its module → module_not_enabled.
// A key whose checksum fails never reaches the cache or the database.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyCache } from '../accounts/key-cache.ts';
import { parseApiKey } from '../domain/api-keys.ts';
import { errors } from '../errors/app-error.ts';
import type { AuthContext } from '../domain/tenant.ts';
import { batchOperationOf } from './batch-context.ts';
import type { RouteConfig } from './context.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Tracing } from '../telemetry/tracing.ts';

export interface AuthenticateDeps {
  keyCache: KeyCache;
  rateLimiter: RateLimiter;
  keyBrand: string;
  now?: () => number;
  /** With traces on: the key's lookup (cache, else the database) gets a span of its own. */
  tracing?: Tracing;
}

/** What the authentication span says: nothing of the key, only that it is the API key scheme. */
const AUTH_SPAN_ATTRIBUTES = { 'balcao.auth.scheme': 'bearer' } as const;

const BEARER = /^Bearer +(\S+) *$/i;

export function createAuthenticateHook(deps: AuthenticateDeps) {
  const now = deps.now ?? Date.now;
  const tracing = deps.tracing;

  async function refuseAnonymous(request: FastifyRequest, reply: FastifyReply, error: Error): Promise<never> {
    await deps.rateLimiter.chargeAnonymous(request.ip, reply);
    throw error;
  }

  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const config = request.routeOptions.config as Partial<RouteConfig>;
    if (config.public) {
      // The public part of the API (its description) counts as anonymous use (SPEC 8); the docs,
      // error pages, health and metrics outside /v1 are not rate-limited.
      if (request.url.startsWith('/v1/')) await deps.rateLimiter.chargeAnonymous(request.ip, reply);
      return;
    }
    // Unmatched /v1/ paths are authenticated and counted too (SPEC 8: a 404 counts), then
    // answered 404/405 by the not-found handler; other unmatched paths are plain 404s.
    if (!config.operationId && !(request.is404 && request.url.startsWith('/v1/'))) return;

    // An operation of a batch: the batch's key, already authenticated and charged; the guard below still applies.
    const operation = batchOperationOf(request);
    if (operation) {
      request.auth = operation.auth;
      request.tenant = { accountId: operation.auth.accountId, mode: operation.auth.mode };
      return guard(operation.auth, config);
    }

    const header = request.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    const parsed = match ? parseApiKey(match[1] as string, deps.keyBrand) : undefined;
    if (!parsed) return refuseAnonymous(request, reply, errors.invalidToken());

    // The rate-limit charge below is not part of the span: it has its own, beside this one (request-tracing.ts).
    const entry = await (tracing
      ? tracing.childSpan('authenticate', AUTH_SPAN_ATTRIBUTES, () => deps.keyCache.lookup(parsed.hash))
      : deps.keyCache.lookup(parsed.hash));
    if (!entry) return refuseAnonymous(request, reply, errors.invalidToken());
    const auth = entry.context;
    if (auth.revoked) return refuseAnonymous(request, reply, errors.tokenRevoked());
    if (auth.expiresAt !== null && auth.expiresAt.getTime() <= now()) return refuseAnonymous(request, reply, errors.tokenExpired());
    if (entry.ipMatcher && !entry.ipMatcher(request.ip)) return refuseAnonymous(request, reply, errors.ipNotAllowed());

    request.auth = auth;
    request.tenant = { accountId: auth.accountId, mode: auth.mode };
    const method = request.method;
    await deps.rateLimiter.chargeKey(auth, method === 'GET' || method === 'HEAD' ? 'read' : 'write', reply);

    guard(auth, config);
  };
}

/** The account, the route's scope (read-only plans refuse writes) and its module. */
function guard(auth: AuthContext, config: Partial<RouteConfig>): void {
  if (!auth.apiEnabled) throw errors.apiDisabled();
  const { resource, access, module } = config;
  if (resource && access) {
    if (access === 'write' && auth.readOnly) throw errors.insufficientScope('The plan of this account allows reads only.');
    if (!auth.granted.has(`${resource}:${access}`))
      throw errors.insufficientScope(`This operation requires the scope ${resource}:${access}.`);
  }
  if (module && !auth.modules.includes(module)) throw errors.moduleNotEnabled(module);
}
