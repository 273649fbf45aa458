// Prometheus metrics at GET /metrics (public, not in the API description: operators keep it
// off the public edge): request counts and latencies by operation and status, and the health
// of the rate-limit store (DECISIONS B.16 asks for its outages in readiness and metrics).
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { RequestStats } from './request-stats.ts';
import type { RateLimiter } from './rate-limit.ts';

export function registerMetrics(app: FastifyInstance, rateLimiter: RateLimiter, options: { processMetrics?: boolean } = {}) {
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
    collect() {
      const { store, healthy } = rateLimiter.status();
      this.reset();
      this.set({ store }, healthy ? 1 : 0);
    },
  });

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
    done();
  });

  app.get(
    '/metrics',
    { config: { operationId: 'metrics.get', public: true }, schema: { hide: true } as object },
    async (_request, reply) => {
      reply.type(registry.contentType);
      return registry.metrics();
    },
  );
}
