// The composition root of the HTTP service: buildApp(deps) assembles the pipeline and the
// routes over the given database and rate limiter. It never listens; `balcao serve` does.
import Fastify, { type FastifyInstance } from 'fastify';
import { KeyCache, type KeyCacheOptions } from './accounts/key-cache.ts';
import type { Config } from './config.ts';
import type { Database } from './infra/db/database.ts';
import { createAuthenticateHook } from './http/authenticate.ts';
import { validatorCompiler } from './http/body-validation.ts';
import { createErrorHandler } from './http/error-handler.ts';
import { createRateLimiter, type RateLimiter } from './http/rate-limit.ts';
import { registerHealthRoutes } from './http/health.ts';
import { registerMetrics } from './http/metrics.ts';
import { generateRequestId } from './http/request-id.ts';
import { trackRoutes } from './http/route-table.ts';
import { registerDocs } from './docs/register-docs.ts';
import { registerOpenApi } from './openapi/plugin.ts';
import { registerMeRoute } from './resources/me.ts';
import type { ResourceDescriptor } from './resources/descriptor.ts';
import { registerReadRoutes } from './resources/read-routes.ts';
import { RESOURCES } from './resources/registry.ts';
import { registerWriteRoutes } from './resources/write-routes.ts';
import './http/context.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  /** Defaults to one built from config.redisUrl. */
  rateLimiter?: RateLimiter;
  /** Injected clock (ms) for rate limits, key expiry and caches in tests. */
  now?: () => number;
  logger?: boolean | { level: string };
  /** Node process metrics (memory, event loop, GC) on /metrics: for the served process, not tests. */
  processMetrics?: boolean;
  /** Authentication cache timings (the benchmark compares cached and uncached lookups). */
  keyCache?: KeyCacheOptions;
  /** The resources served; default: the registry (a test serves a fixture resource this way). */
  resources?: readonly ResourceDescriptor[];
}

export const BODY_LIMIT = 1024 * 1024;

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel },
    genReqId: generateRequestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: false,
  });
  // One validator for every route (before any registers): bodies are not coerced ("3" is not 3),
  // every refused field is reported and unnamed fields are dropped (DECISIONS B.7).
  app.setValidatorCompiler(validatorCompiler);

  const rateLimiter = deps.rateLimiter ?? createRateLimiter({ redisUrl: config.redisUrl, now: deps.now, logger: app.log });
  const keyCache = new KeyCache(database.db, { now: deps.now, ...deps.keyCache });

  app.decorateRequest('auth', null);
  app.decorateRequest('tenant', null);
  app.decorate('database', database);

  // text/plain is not a write body here: only JSON is parsed, anything else is a 415.
  app.removeContentTypeParser(['text/plain']);

  const routes = trackRoutes(app);
  app.setNotFoundHandler(routes.notFound);
  app.setErrorHandler(createErrorHandler(config.errorsUrl, routes.routeMiss));
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onRequest', createAuthenticateHook({ keyCache, rateLimiter, keyBrand: config.keyBrand, now: deps.now }));
  app.addHook('onClose', async () => {
    await rateLimiter.close();
  });

  // Before every route: @fastify/swagger collects the routes as they register.
  const resources = deps.resources ?? RESOURCES;
  await registerOpenApi(app, config, resources);
  registerDocs(app, config);
  registerHealthRoutes(app, database, rateLimiter);
  registerMetrics(app, rateLimiter, { processMetrics: deps.processMetrics });
  registerMeRoute(app);
  registerReadRoutes(app, { ...deps, resources });
  registerWriteRoutes(app, { ...deps, resources });

  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    database: Database;
  }
}
