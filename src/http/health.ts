// Liveness and readiness for operators and load balancers. Public, not rate-limited per key.
// Readiness pings the database (its loss is a 503) and reports the rate-limit store, which
// fails open (DECISIONS B.16): a degraded Redis is reported but does not make the instance unready.
// The ping has its own short deadline, and a stopping instance is unready at once.
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../infra/db/engine/database.ts';
import type { RateLimiter } from './rate-limit.ts';

const ReadinessSchema = Type.Object({
  // An enum rather than a union of literals: fast-json-stringify serializes a union through an Ajv
  // validator built on first use, which made a fresh server's first readiness answer take 0.3–1 s.
  status: Type.Unsafe<'ready' | 'unavailable'>({ type: 'string', enum: ['ready', 'unavailable'] }),
  database: Type.Object({ engine: Type.String(), healthy: Type.Boolean() }),
  rate_limit_store: Type.Object({ store: Type.String(), healthy: Type.Boolean() }),
  // Informative: a capture that stops delays events, it does not stop the API (docs/operations.md says what to alert on).
  capture: Type.Optional(
    Type.Object({
      state: Type.String(),
      lag_bytes: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
      lag_seconds: Type.Number(),
      reason: Type.Optional(Type.String()),
    }),
  ),
  // With BALCAO_READ_DATABASE_URL: informative only, the primary serves every read a replica cannot.
  read_replicas: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String(),
        state: Type.Unsafe<string>({ type: 'string', enum: ['starting', 'up', 'lagging', 'down', 'not_standby'] }),
        lag_ms: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
      }),
    ),
  ),
});

export interface ReadinessOptions {
  /** Longest the database ping may take before the answer is "not ready". */
  timeoutMs: number;
  /** True once a graceful stop began: the load balancer must stop sending here at once. */
  stopping: () => boolean;
  /** The change capture's state and lag (events/capture). */
  capture?: () => Promise<CaptureReport>;
}

export interface CaptureReport {
  state: string;
  lagBytes: number | null;
  lagSeconds: number;
  reason?: string;
}

/** The capture's report within `ms`, or nothing. */
async function captureReport(readiness: ReadinessOptions, ms: number) {
  if (!readiness.capture) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    const report = await Promise.race([readiness.capture().catch(() => undefined), deadline]);
    if (!report) return undefined;
    return {
      state: report.state,
      lag_bytes: report.lagBytes,
      lag_seconds: Math.round(report.lagSeconds * 1000) / 1000,
      ...(report.reason ? { reason: report.reason } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The database answers within `ms`, or not (a locked pool or a dead server must not hold readiness). */
async function databaseAnswers(database: Database, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const ping = sql`SELECT 1`.execute(database.db).then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([ping, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealthRoutes(app: FastifyInstance, database: Database, rateLimiter: RateLimiter, readiness: ReadinessOptions) {
  app.get('/health/live', { config: { operationId: 'health.live', public: true }, schema: { hide: true } as object }, async () => ({
    status: 'ok',
  }));
  app.get(
    '/health/ready',
    {
      config: { operationId: 'health.ready', public: true },
      schema: { hide: true, response: { 200: ReadinessSchema, 503: ReadinessSchema } } as object,
    },
    async (_request, reply) => {
      const healthy = !readiness.stopping() && (await databaseAnswers(database, readiness.timeoutMs));
      const capture = healthy ? await captureReport(readiness, readiness.timeoutMs) : undefined;
      const body = {
        status: healthy ? ('ready' as const) : ('unavailable' as const),
        database: { engine: database.engine, healthy },
        rate_limit_store: rateLimiter.status(),
        ...(capture ? { capture } : {}),
        ...(database.reads ? { read_replicas: database.reads.status() } : {}),
      };
      return reply.code(healthy ? 200 : 503).send(body);
    },
  );
}

/** The database is pinged for the metric at most this often: scrapes come every 15 s or so, but a test or an operator
 *  watching a stop drain scrapes many times a second, and each ping would take a pooled connection from requests. */
const READY_PING_EVERY_MS = 5_000;

/** `balcao_ready` for /metrics: what /health/ready would answer (1 ready, 0 not), so an alert needs no separate probe;
 *  0 at once when a stop begins. With --workers the lowest worker's value. */
export function registerReadinessMetric(registry: Registry, database: Database, readiness: ReadinessOptions): void {
  let answered = true;
  let pingedAt = Number.NEGATIVE_INFINITY;
  new Gauge({
    name: 'balcao_ready',
    help: '1 when /health/ready would answer 200 (the database answers within BALCAO_READINESS_TIMEOUT_MS, not stopping); 0 otherwise.',
    registers: [registry],
    aggregator: 'min',
    async collect() {
      if (!readiness.stopping() && Date.now() - pingedAt >= READY_PING_EVERY_MS) {
        answered = await databaseAnswers(database, readiness.timeoutMs);
        pingedAt = Date.now();
      }
      this.set(!readiness.stopping() && answered ? 1 : 0);
    },
  });
}
