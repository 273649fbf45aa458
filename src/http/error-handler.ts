// The one renderer of failures: every error becomes application/problem+json with the
// request id. Fastify's own errors are translated to the spec's codes here; anything
// unexpected is a 500 `internal_error` whose cause goes to the log, never to the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errors } from '../errors/app-error.ts';
import { ERROR_CATALOGUE } from '../errors/catalogue.ts';
import { toAppError } from '../errors/database-errors.ts';
import { toFieldErrors } from './body-validation.ts';
import { noteFailure } from './database-failures.ts';

export function createErrorHandler(errorsUrl: string, routeMiss: (request: FastifyRequest) => AppError) {
  return function errorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
    // A body that fails to parse on an unknown route is still a 404/405: the route decides first.
    const appError = request.is404 && !(error instanceof AppError) ? routeMiss(request) : translate(error);
    if (appError.status >= 500) {
      noteFailure(request, appError);
      request.log.error({ err: appError.cause ?? error, code: appError.code }, 'request failed');
    }
    return sendProblem(reply, request, appError, errorsUrl);
  };
}

export function sendProblem(reply: FastifyReply, request: FastifyRequest, error: AppError, errorsUrl: string) {
  const entry = ERROR_CATALOGUE[error.code];
  const body: Record<string, unknown> = {
    type: `${errorsUrl}/${error.code}`,
    title: entry.title,
    status: error.status,
  };
  if (error.detail !== undefined) body.detail = error.detail;
  body.instance = request.url.split('?', 1)[0];
  body.request_id = request.id;
  if (error.errors) body.errors = error.errors;
  if (error.extensions) Object.assign(body, error.extensions);
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.status).type('application/problem+json').serializer(JSON.stringify).send(body);
}

function translate(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const fe = error as FastifyError;
  if (fe.validation) {
    if (fe.validationContext === 'body') return errors.bodyInvalid(toFieldErrors(fe.validation));
    return errors.queryInvalid(`${fe.validationContext ?? 'request'}_invalid`);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? errors.unsupportedMediaType() : errors.bodyInvalid([invalidJson()]);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.bodyInvalid([invalidJson()]);
  }
  // Fastify's JSON parser reports malformed bodies as 400 SyntaxErrors.
  if (fe.statusCode === 400 && (error instanceof SyntaxError || fe.code === undefined)) return errors.bodyInvalid([invalidJson()]);
  return toAppError(error);
}

const invalidJson = () => ({ field: 'body', code: 'invalid_json', message: 'O corpo da requisição não é um JSON válido.' });
