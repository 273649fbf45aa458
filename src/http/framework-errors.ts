// Fastify's and Node's own refusals, rendered like every other error: application/problem+json with
// X-Request-Id. A path Fastify cannot decode is a 400 `bad_request`; an over-long path parameter names
// no record, so it is a 404. Failures met before any request exists (a header overflow, a slow client,
// a broken request line) are written straight to the socket, which is then closed.
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, errors } from '../errors/app-error.ts';
import { ERROR_CATALOGUE } from '../errors/catalogue.ts';
import { sendProblem } from './error-handler.ts';
import { randomUUID } from 'node:crypto';

/** Fastify's `frameworkErrors` option: a path that fails to decode, a parameter over maxParamLength. */
export function createFrameworkErrors(errorsUrl: string) {
  return (error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);
    const appError =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? errors.notFound()
        : error.code === 'FST_ERR_BAD_URL'
          ? errors.badUrl()
          : errors.internal(error);
    if (appError.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, request, appError, errorsUrl);
  };
}

const CLIENT_ERRORS: Record<string, () => AppError> = {
  ERR_HTTP_REQUEST_TIMEOUT: errors.requestTimeout,
  HPE_HEADER_OVERFLOW: () => errors.headerTooLarge(),
};

/** Fastify's `clientErrorHandler` option: Node's parser and timeout failures on a connection. */
export function createClientErrorHandler(errorsUrl: string) {
  return (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = (CLIENT_ERRORS[err.code ?? ''] ?? errors.badHttp)();
    const requestId = randomUUID();
    const entry = ERROR_CATALOGUE[problem.code];
    const body = JSON.stringify({
      type: `${errorsUrl}/${problem.code}`,
      title: entry.title,
      status: entry.status,
      detail: problem.detail,
      request_id: requestId,
    });
    // A response already under way on this socket cannot be followed by another one.
    if ((socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy(err);
      return;
    }
    socket.end(
      `HTTP/1.1 ${entry.status} ${entry.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}
