// The composition root of the HTTP service: buildApp(deps) assembles the pipeline and the
// routes over the given database and rate limiter. It never listens; `balcao serve` does.
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { errors } from './errors/app-error.ts';
import { KeyCache, type KeyCacheOptions } from './accounts/key-cache.ts';
import type { Config } from './config.ts';
import type { Database } from './infra/db/engine/database.ts';
import { registerAccessLog } from './http/access-log.ts';
import { createAuthenticateHook } from './http/authenticate.ts';
import { bodyValidators } from './http/body-validation.ts';
import { createErrorHandler } from './http/error-handler.ts';
import { createClientErrorHandler, createFrameworkErrors } from './http/framework-errors.ts';
import { addLifecycle } from './http/graceful-stop.ts';
import { createRateLimiter, type RateLimiter } from './http/rate-limit.ts';
import { registerHealthRoutes, registerReadinessMetric } from './http/health.ts';
import { registerMetrics } from './http/metrics.ts';
import { registerReadYourWrites } from './http/read-your-writes.ts';
import { lazySerializers } from './http/lazy-serializers.ts';
import { generateRequestId } from './http/request-id.ts';
import { trackRoutes } from './http/route-table.ts';
import { registerDocs } from './docs/register-docs.ts';
import { registerDeprecation } from './http/deprecation.ts';
import { registerOpenApi } from './openapi/plugin.ts';
import { registerMeRoute } from './resources/descriptors/me.ts';
import type { ResourceDescriptor } from './resources/descriptor.ts';
import { registerReadRoutes } from './resources/engines/read-routes.ts';
import { RESOURCES } from './resources/registry.ts';
import { registerWriteRoutes } from './resources/engines/write-routes.ts';
import { registerRequestLogRoute } from './resources/engines/request-log.ts';
import { TableMaintenance } from './infra/db/maintenance/table-maintenance.ts';
import { registerBatchRoute } from './resources/engines/batch.ts';
import type { ChangeCapture } from './events/capture/change-capture.ts';
import { changeCapture } from './events/capture/engine-capture.ts';
import { originMarker } from './events/write-origin.ts';
import { registerEvents } from './webhooks/register.ts';
import { startTracing, type Tracing } from './telemetry/tracing.ts';
import { traceRequests, tracedRateLimiter } from './http/request-tracing.ts';
import './http/context.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  /** Defaults to one built from config.redisUrl. */
  rateLimiter?: RateLimiter;
  /** Injected clock (ms) for rate limits, key expiry and caches in tests. */
  now?: () => number;
  logger?: boolean | { level: string; stream?: NodeJS.WritableStream };
  /** Node process metrics (memory, event loop, GC) on /metrics: for the served process, not tests. */
  processMetrics?: boolean;
  /** HTTP limits other than the defaults (tests shorten the timeouts). */
  serverLimits?: Partial<ServerLimits>;
  /** Authentication cache timings (the benchmark compares cached and uncached lookups). */
  keyCache?: KeyCacheOptions;
  /** The resources served; default: the registry (a test serves a fixture resource this way). */
  resources?: readonly ResourceDescriptor[];
  /** The change capture; default: one for the database's engine, started once the app listens (events/capture). */
  capture?: ChangeCapture;
  /** How often the tables are checked for a due ANALYZE or VACUUM (src/infra/db/maintenance/table-maintenance.ts); tests shorten
   *  it, or turn it off with 0. */
  tableMaintenanceEveryMs?: number;
}

export const BODY_LIMIT = 1024 * 1024;

/**
 * HTTP limits, set on purpose (docs/operations.md): a slow client is cut off, an oversized request is
 * refused as problem+json before any work is done.
 */
export const SERVER_LIMITS = {
  /** The whole request, headers and body (a body trickled a byte at a time ends here). */
  requestTimeoutMs: 30_000,
  /** The request line and headers. */
  headersTimeoutMs: 10_000,
  /** An idle keep-alive connection; above the 60 s idle timeout of common load balancers. */
  keepAliveTimeoutMs: 65_000,
  /** How often Node checks the two timeouts above. */
  timeoutCheckEveryMs: 1_000,
  /** Request line plus headers (Node's default, made explicit): over it is a 431. */
  maxHeaderBytes: 16 * 1024,
  /** Header fields: over it is a 431. */
  maxHeaderCount: 100,
  /** A path parameter: any that fits in the header limit reaches its route (an over-long id is a 404). */
  maxParamLength: 16 * 1024,
} as const;
export type ServerLimits = { readonly [K in keyof typeof SERVER_LIMITS]: number };

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const limits: ServerLimits = { ...SERVER_LIMITS, ...deps.serverLimits };
  const app = createFastify(deps, limits);
  // Traces (OTEL_TRACES_EXPORTER=otlp): the SDK is loaded only then; off, nothing of it runs (telemetry/tracing.ts).
  const tracing = config.traces ? await startTracing(config.traces, app.log) : undefined;
  app.decorate('tracing', tracing);
  const limiter = deps.rateLimiter ?? createRateLimiter({ redisUrl: config.redisUrl, now: deps.now, logger: app.log });
  const rateLimiter = tracing ? tracedRateLimiter(limiter, tracing) : limiter;
  const lifecycle = addLifecycle(app);
  if (tracing) traceRequests(app, tracing);
  app.decorateRequest('auth', null);
  app.decorateRequest('tenant', null);
  app.decorate('database', database);
  const capture = deps.capture ?? changeCapture(database, { url: database.sessionUrl, log: app.log.child({ component: 'capture' }) });
  registerPipeline(app, deps, limits, rateLimiter, capture);

  // Before every route: @fastify/swagger collects the routes as they register.
  const resources = deps.resources ?? RESOURCES;
  registerDeprecation(app, config.publicUrl);
  await registerOpenApi(app, config, resources);
  registerDocs(app, config);
  const readiness = { timeoutMs: config.readinessTimeoutMs, stopping: () => lifecycle.stopping, capture: () => capture.status() };
  registerHealthRoutes(app, database, rateLimiter, readiness);
  registerMetrics(app, rateLimiter, {
    processMetrics: deps.processMetrics,
    public: config.metricsPublic,
    reads: database.reads,
    poolSize: database.engine === 'postgres' ? config.dbPoolSize : 1,
    capture,
  });
  registerReadinessMetric(app.metrics, database, readiness);
  registerMeRoute(app, rateLimiter);
  registerReadRoutes(app, { ...deps, resources });
  registerWriteRoutes(app, {
    ...deps,
    resources,
    // The embedded database's capture looks at its change log as soon as a write commits.
    recordWrite: originMarker(() => capture.written('', 0)),
  });
  registerRequestLogRoute(app, deps);
  registerBatchRoute(app, { config, database, rateLimiter, resources });
  registerEvents(app, { ...deps, capture });
  keepTablesMaintained(app, database, deps.tableMaintenanceEveryMs);
  return app;
}

/** Statistics for new and grown tables while the app serves (plans made without them scan what they should look
 *  up), and on PGlite, which has no autovacuum, the vacuuming of dead rows. */
function keepTablesMaintained(app: FastifyInstance, database: Database, everyMs?: number): void {
  if (everyMs === 0) return;
  const maintenance = new TableMaintenance(database, app.log, everyMs);
  app.addHook('onReady', async () => maintenance.start());
  app.addHook('onClose', async () => maintenance.close());
}

/** Fastify with the spec's limits, our errors for what fails before a route, and one validator and serializer compiler. */
function createFastify(deps: AppDeps, limits: ServerLimits): FastifyInstance {
  const { config } = deps;
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel },
    genReqId: generateRequestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: false,
    // onReady waits for the change capture's slot on a database's first start (docs/operations.md, "Change capture"):
    // making one waits for the transactions running then, which a busy cluster may make take more than Fastify's 10 s.
    pluginTimeout: 60_000,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    routerOptions: { maxParamLength: limits.maxParamLength },
    http: {
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: limits.timeoutCheckEveryMs,
      maxHeaderSize: limits.maxHeaderBytes,
    },
    // The access log below writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: createFrameworkErrors(config.errorsUrl),
    clientErrorHandler: createClientErrorHandler(config.errorsUrl),
    // One validator for every route: bodies are not coerced ("3" is not 3), every refused field is
    // reported and unnamed fields are dropped (DECISIONS B.7). Given here, not by setValidatorCompiler,
    // so that Fastify never loads its default Ajv compiler (and Ajv's JTD modules) at start-up.
    schemaController: { compilersFactory: { buildValidator: bodyValidators, buildSerializer: lazySerializers } },
  });
  // One more than the limit is kept, so a request over it is told so rather than losing headers silently.
  app.server.maxHeadersCount = limits.maxHeaderCount + 1;
  // text/plain is not a write body here: only JSON is parsed, anything else is a 415.
  app.removeContentTypeParser(['text/plain']);
  return app;
}

/** What every request passes before its route: request id and header limits, the access log, authentication
 *  and rate limit, and the errors of requests no route takes. */
function registerPipeline(
  app: FastifyInstance,
  deps: AppDeps,
  limits: ServerLimits,
  rateLimiter: RateLimiter,
  capture: ChangeCapture,
): void {
  const { config, database } = deps;
  const keyCache = new KeyCache(database.lookups ?? database.db, { now: deps.now, ...deps.keyCache });
  const routes = trackRoutes(app);
  app.decorate('routeTable', routes);
  app.setNotFoundHandler(routes.notFound);
  app.setErrorHandler(createErrorHandler(config.errorsUrl, routes.routeMiss));
  // The per-request hooks that do not wait on anything are callback style: no promise and no extra
  // microtask turn per request (docs/performance.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (request.raw.rawHeaders.length > limits.maxHeaderCount * 2)
      return done(errors.headerTooLarge(`A request may carry at most ${limits.maxHeaderCount} header fields.`));
    // DELETE takes no payload: a JSON content type some clients always send, with no body, is ignored.
    if (request.method === 'DELETE' && isEmptyBody(request.headers)) delete request.raw.headers['content-type'];
    done();
  });
  registerAccessLog(app, app.tracing);
  database.reads?.setLogger((level, details, message) => app.log[level](details, message));
  // On PostgreSQL every write's commit position is noted: the feed waits for capture to pass it (and replicas).
  if (database.engine === 'postgres')
    registerReadYourWrites(app, { reads: database.reads, written: (tenant, at) => capture.written(tenant, at) });
  app.addHook(
    'onRequest',
    createAuthenticateHook({ keyCache, rateLimiter, keyBrand: config.keyBrand, now: deps.now, tracing: app.tracing }),
  );
  app.addHook('onClose', async () => {
    await rateLimiter.close();
  });
  // With REDIS_URL, listening waits (bounded) until Redis answers: limits are exact from the first request.
  // Started here, after the app is built, so the wait is not eaten by the build's own blocking work.
  app.addHook('onReady', async () => {
    await rateLimiter.start(config.redisStartupWaitMs);
  });
}

const isEmptyBody = (headers: Record<string, string | string[] | undefined>) =>
  headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0');

declare module 'fastify' {
  interface FastifyInstance {
    database: Database;
    routeTable: ReturnType<typeof trackRoutes>;
    /** The app's traces; undefined when they are off (the default). */
    tracing: Tracing | undefined;
  }
}
