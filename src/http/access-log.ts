// One access-log line per request, written when the response is finished: who (account, key, mode),
// what (operation id, method, status), how long and how big. Never the Authorization header, a key,
// an Idempotency-Key value, the URL (a client may put a key in it) or a body: only ids that are safe to keep.
// With traces on, the line also carries the request's `trace_id` (docs/operations.md, "Traces").
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Tracing } from '../telemetry/tracing.ts';

export function registerAccessLog(app: FastifyInstance, tracing?: Tracing): void {
  if (tracing) {
    app.addHook('onResponse', (request, reply, done) => {
      const line = requestLine(request, reply);
      line.trace_id = tracing.traceIdOf(request.raw);
      request.log.info(line, 'request');
      done();
    });
    return;
  }
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(requestLine(request, reply), 'request');
    done();
  });
}

function requestLine(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  const auth = request.auth;
  const length = reply.getHeader('content-length');
  return {
    op: request.routeOptions.config?.operationId,
    method: request.method,
    status: reply.statusCode,
    ms: Math.round(reply.elapsedTime * 10) / 10,
    bytes: length === undefined ? undefined : Number(length),
    account: auth?.accountId,
    key: auth?.keyId,
    mode: auth?.mode,
  };
}
