// Prometheus metrics at GET /metrics (public, not in the API description: operators keep it
// off the public edge): request counts and latencies by operation and status, and the health
// of the rate-limit store (DECISIONS B.16 asks for its outages in readiness and metrics).
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { RateLimiter } from './rate-limit.ts';

export function registerMetrics(app: FastifyInstance, rateLimiter: RateLimiter, options: { processMetrics?: boolean } = {}) {
  // One registry per app instance: tests build many apps in one process.
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'balcao_' });

  const requests = new Counter({
    name: 'balcao_http_requests_total',
    help: 'HTTP requests answered, by operation, method and status.',
    labelNames: ['operation', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'balcao_http_request_duration_seconds',
    help: 'Time to answer, by operation.',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
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
  const inFlight = new Gauge({
    name: 'balcao_http_requests_in_flight',
    help: 'Requests received and not yet answered.',
    registers: [registry],
  });
  // prom-client hashes the labels on every call; the series a route writes are looked up once instead.
  const counted = new Map<string, { inc(): void }>();
  const timed = new Map<string, { observe(seconds: number): void }>();
  app.addHook('onRequest', (_request, _reply, done) => {
    inFlight.inc();
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    inFlight.dec();
    const operation = request.routeOptions.config.operationId ?? (request.is404 ? 'unmatched' : 'internal');
    const series = `${operation} ${request.method} ${reply.statusCode}`;
    let counter = counted.get(series);
    if (!counter) {
      counter = requests.labels({ operation, method: request.method, status: String(reply.statusCode) });
      counted.set(series, counter);
    }
    counter.inc();
    let timer = timed.get(operation);
    if (!timer) {
      timer = duration.labels({ operation });
      timed.set(operation, timer);
    }
    timer.observe(reply.elapsedTime / 1000);
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
