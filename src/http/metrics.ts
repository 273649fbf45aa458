// Prometheus metrics: request counts and latencies by operation and status, requests in flight, and
// the health of the rate-limit store (DECISIONS B.16 asks for its outages in readiness and metrics).
// Served at GET /metrics on a listener of their own (BALCAO_METRICS_PORT, loopback by default), never
// beside /v1 unless the operator asks (BALCAO_METRICS_PUBLIC=true); why in docs/operations.md.
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, type Metric, Registry } from 'prom-client';
import { databaseFailureCause } from './database-failures.ts';
import { RequestStats } from './request-stats.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { ReadRouter } from '../infra/db/replicas/read-router.ts';
import type { CaptureReport } from './health.ts';

/** What the metrics read of the change capture (events/capture). */
export interface CaptureMetricsSource {
  status(): Promise<CaptureReport>;
  readonly recorded: number;
}

export function registerMetrics(
  app: FastifyInstance,
  rateLimiter: RateLimiter,
  options: { processMetrics?: boolean; public?: boolean; reads?: ReadRouter; poolSize?: number; capture?: CaptureMetricsSource } = {},
): Registry {
  // One registry per app instance: tests build many apps in one process.
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'balcao_' });

  const stats = new RequestStats();
  // The registry only reads name, help, type and get() of a metric (Registry#getMetricsAsString).
  for (const metric of [
    stats.counter('balcao_http_requests_total', 'HTTP requests answered, by operation, method and status.'),
    stats.histogram('balcao_http_request_duration_seconds', 'Time to answer, by operation.'),
  ])
    registry.registerMetric(metric as unknown as Metric);
  new Gauge({
    name: 'balcao_rate_limit_store_healthy',
    help: '1 when the rate-limit store answers; 0 while Redis is unreachable and per-instance counters stand in.',
    labelNames: ['store'] as const,
    registers: [registry],
    // Summed over --workers it would read 2; the lowest is the truth (one unhealthy worker is unhealthy).
    aggregator: 'min',
    collect() {
      const { store, healthy } = rateLimiter.status();
      this.reset();
      this.set({ store }, healthy ? 1 : 0);
    },
  });

  // Always registered, so dashboards and alerts find the series' names; without replicas they have no samples.
  registerReplicaMetrics(registry, options.reads);

  new Gauge({
    name: 'balcao_db_pool_size',
    help: 'Database connections this process may open for requests (BALCAO_DB_POOL_SIZE; 1 on the embedded database).',
    registers: [registry],
    collect() {
      this.set(options.poolSize ?? 1);
    },
  });
  const unavailable = new Counter({
    name: 'balcao_db_unavailable_total',
    help: 'Requests answered 503 because of the database, by cause: acquire_timeout (no pooled connection in time: the pool is exhausted), lookup_timeout, statement_timeout, connection.',
    labelNames: ['cause'] as const,
    registers: [registry],
  });
  if (options.capture) registerCaptureMetrics(registry, options.capture);

  // What a graceful stop still has to finish; operators watch it drain.
  let inFlight = 0;
  new Gauge({
    name: 'balcao_http_requests_in_flight',
    help: 'Requests received and not yet answered.',
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    inFlight += 1;
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    inFlight -= 1;
    const operation = request.routeOptions.config.operationId ?? (request.is404 ? 'unmatched' : 'internal');
    stats.record(operation, request.method, reply.statusCode, reply.elapsedTime / 1000);
    const failure = reply.statusCode === 503 ? databaseFailureCause(request) : undefined;
    if (failure) unavailable.inc({ cause: failure });
    done();
  });

  app.decorate('metrics', registry);
  if (options.public)
    app.get(
      '/metrics',
      { config: { operationId: 'metrics.get', public: true }, schema: { hide: true } as object },
      async (_request, reply) => {
        reply.type(registry.contentType);
        return registry.metrics();
      },
    );
  return registry;
}

/** What a metrics listener serves: the text of one registry, or of every worker's (the --workers primary). */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

/** In a --workers worker: answer the primary's requests for this worker's metrics (prom-client's cluster channel). */
export function shareWithPrimary(registry: Registry): void {
  new AggregatorRegistry(); // installs the worker's answering listener
  AggregatorRegistry.setRegistries([registry]);
}

/** In the --workers primary: every worker's metrics, asked for over the cluster channel and summed. */
export function workersMetrics(): MetricsSource {
  const aggregate = new AggregatorRegistry();
  return { contentType: aggregate.contentType, metrics: () => aggregate.clusterMetrics() };
}

/**
 * GET /metrics on a plain node:http listener of its own (BALCAO_METRICS_PORT): off the public port, outside
 * the API's pipeline (no rate limit, no access log). Resolves once listening; `close()` ends it and its
 * connections (a scrape is short: nothing to drain).
 */
export async function listenMetrics(source: MetricsSource, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the metrics listener serves GET /metrics only\n');
      return;
    }
    source.metrics().then(
      (text) => response.writeHead(200, { 'content-type': source.contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's metrics, for a listener of their own (listenMetrics) or a --workers primary's aggregate. */
    metrics: Registry;
  }
}

/** Each read replica's state and lag, and where reads went (BALCAO_READ_DATABASE_URL). */
function registerReplicaMetrics(registry: Registry, reads: ReadRouter | undefined): void {
  new Gauge({
    name: 'balcao_read_replica_up',
    help: '1 while the replica takes reads; 0 while it is skipped (down, lagging past BALCAO_READ_MAX_LAG_MS, not a standby).',
    labelNames: ['replica', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of reads?.status() ?? []) this.set({ replica: r.name, state: r.state }, r.state === 'up' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'balcao_read_replica_lag_seconds',
    help: 'How far the replica was behind the primary at the last poll (absent while unknown).',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of reads?.status() ?? []) if (r.lag_ms !== null) this.set({ replica: r.name }, r.lag_ms / 1000);
    },
  });
  // Counters kept by the router, copied at each scrape.
  new Counter({
    name: 'balcao_db_reads_total',
    help: 'Routed reads (lists, gets, the events feed, exports) by where they ran: the primary, or a replica.',
    labelNames: ['target'] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!reads) return;
      this.inc({ target: 'primary' }, reads.primaryReads);
      for (const c of reads.counters()) this.inc({ target: c.name }, c.reads);
    },
  });
  new Counter({
    name: 'balcao_read_replica_fallbacks_total',
    help: 'Reads that failed on the replica and were answered by the primary.',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of reads?.counters() ?? []) this.inc({ replica: c.name }, c.fallbacks);
    },
  });
}

/** The change capture: its lag (what to alert on, docs/operations.md), whether this instance captures, and its events. */
function registerCaptureMetrics(registry: Registry, capture: CaptureMetricsSource): void {
  let last: Promise<CaptureReport | undefined> | undefined;
  let lastAt = 0;
  // One status query per scrape, shared by the gauges below.
  const report = () => {
    if (!last || Date.now() - lastAt > 500) {
      lastAt = Date.now();
      last = capture.status().catch(() => undefined);
    }
    return last;
  };
  new Gauge({
    name: 'balcao_capture_lag_bytes',
    help: 'WAL bytes committed that the change capture has not confirmed yet (PostgreSQL; what the slot keeps on disk).',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await report();
      if (r?.lagBytes != null) this.set(r.lagBytes);
    },
  });
  new Gauge({
    name: 'balcao_capture_lag_seconds',
    help: 'How long ago the oldest change not yet in the feed committed (0 when caught up).',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const r = await report();
      if (r) this.set(r.lagSeconds);
    },
  });
  new Gauge({
    name: 'balcao_capture_active',
    help: '1 on the instance that captures changes now; the sum over instances is 1 while capture runs.',
    registers: [registry],
    aggregator: 'sum',
    async collect() {
      const r = await report();
      this.set(r?.state === 'capturing' ? 1 : 0);
    },
  });
  new Counter({
    name: 'balcao_capture_events_total',
    help: 'Events made by the change capture of this instance.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(capture.recorded);
    },
  });
}
