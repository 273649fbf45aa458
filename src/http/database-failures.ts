// Why a request was answered 503 because of the database, kept from the error handler to the metrics
// (balcao_db_unavailable_total{cause}): a pool with no free connection, a statement past its timeout, or the
// connection itself (refused, lost). The pool's exhaustion alert (deploy/prometheus/alerts.yml) reads it.
import type { FastifyRequest } from 'fastify';
import type { AppError } from '../errors/app-error.ts';
import { SQLSTATE } from '../errors/sqlstate.ts';

export type DatabaseFailureCause = 'acquire_timeout' | 'lookup_timeout' | 'statement_timeout' | 'connection';

const causes = new WeakMap<FastifyRequest, DatabaseFailureCause>();

/** Called by the error handler for every failure it answers. */
export function noteFailure(request: FastifyRequest, error: AppError): void {
  if (error.code !== 'service_unavailable') return;
  causes.set(request, causeOf(error.cause));
}

export function databaseFailureCause(request: FastifyRequest): DatabaseFailureCause | undefined {
  return causes.get(request);
}

function causeOf(err: unknown): DatabaseFailureCause {
  // The driver's error may sit under one or more wrappers.
  for (let e = err as { code?: unknown; cause?: unknown } | null | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === 'ACQUIRE_TIMEOUT') return 'acquire_timeout';
    if (e.code === 'LOOKUP_TIMEOUT') return 'lookup_timeout';
    if (e.code === SQLSTATE.queryCanceled) return 'statement_timeout';
  }
  return 'connection';
}
