// The request's part of the traces (docs/operations.md, "Traces"), registered only when traces are on: each
// request runs inside a server span named `METHOD /route/{template}`, and the rate-limit store's calls get spans
// of their own. Authentication's span is made in authenticate.ts, the statements' in src/infra/db/engine/traced-driver.ts.
import type { FastifyInstance } from 'fastify';
import type { Tracing } from '../telemetry/tracing.ts';
import type { RateLimiter } from './rate-limit.ts';

/** Server spans for every request the app's listener takes in; call it before the app listens. */
export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  const server = app.server;
  for (const listener of server.listeners('request')) {
    server.off('request', listener as never);
    server.on('request', tracing.serveInSpans(listener as never));
  }
  // The first hook of every request: from here on the route is known. An unrouted request keeps the method alone.
  app.addHook('onRequest', (request, _reply, done) => {
    const span = tracing.serverSpanOf(request.raw);
    if (span) {
      const route = request.routeOptions.url;
      if (route && !request.is404) {
        span.updateName(`${request.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      const operation = request.routeOptions.config?.operationId;
      if (operation) span.setAttribute('balcao.operation_id', operation);
      span.setAttribute('balcao.request_id', request.id);
    }
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    const span = tracing.serverSpanOf(request.raw);
    // The account and the key's mode: ids of Balcão's own records, never the key or its holder.
    if (span && request.auth) {
      span.setAttribute('balcao.account_id', request.auth.accountId);
      span.setAttribute('balcao.key_mode', request.auth.mode);
    }
    done();
  });
  app.addHook('onClose', async () => {
    await tracing.shutdown();
  });
}

/** `limiter` with a span around each call to its store: which store, which kind of charge, allowed or refused. */
export function tracedRateLimiter(limiter: RateLimiter, tracing: Tracing): RateLimiter {
  // Which store is chosen once, when the limiter is made (a Redis store that fails open still counts as redis).
  const store = limiter.status().store;
  const attributes = (operation: string, subject: string) => ({
    'balcao.rate_limit.store': store,
    'balcao.rate_limit.operation': operation,
    'balcao.rate_limit.subject': subject,
  });
  const traced = async <T>(operation: string, subject: string, work: () => Promise<T>): Promise<T> => {
    // A refusal is the limiter doing its work, not a failure of the store: the span says so, and ends unmarked.
    let refusal: unknown;
    const result = await tracing.childSpan('rate-limit', attributes(operation, subject), async (span) => {
      try {
        const done = await work();
        span?.setAttribute('balcao.rate_limit.outcome', 'allowed');
        return done;
      } catch (err) {
        if ((err as { code?: unknown } | null)?.code !== 'rate-limit-exceeded') throw err;
        span?.setAttribute('balcao.rate_limit.outcome', 'refused');
        refusal = err;
        return undefined as T;
      }
    });
    if (refusal !== undefined) throw refusal;
    return result;
  };
  return {
    ...limiter,
    chargeKey: (auth, access, reply) => traced('charge', access, () => limiter.chargeKey(auth, access, reply)),
    chargeMore: (auth, access, amounts, reply) => traced('charge_more', access, () => limiter.chargeMore(auth, access, amounts, reply)),
    liveLimits: (auth) => traced('peek', 'key', () => limiter.liveLimits(auth)),
    chargeAnonymous: (ip, reply) => traced('charge', 'anonymous', () => limiter.chargeAnonymous(ip, reply)),
    start: (waitMs) => limiter.start(waitMs),
    status: () => limiter.status(),
    close: () => limiter.close(),
  };
}
