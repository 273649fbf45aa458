// One access-log line per request, written when the response is finished: who (account, key, mode),
// what (operation id, method, status), how long and how big. Never the Authorization header, a key,
// an Idempotency-Key value, the URL (a client may put a key in it) or a body: only ids that are safe to keep.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request, reply);
    done();
  });
}

function logRequest(request: FastifyRequest, reply: FastifyReply): void {
  const auth = request.auth;
  const length = reply.getHeader('content-length');
  request.log.info(
    {
      op: request.routeOptions.config?.operationId,
      method: request.method,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      bytes: length === undefined ? undefined : Number(length),
      account: auth?.accountId,
      key: auth?.keyId,
      mode: auth?.mode,
    },
    'request',
  );
}
