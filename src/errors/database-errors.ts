// Database failures mapped in one table. Nothing of the driver's text reaches a response:
// a lost or refused connection is 503, anything else unexpected is 500.
import { AppError, errors } from './app-error.ts';
import { inSqlStateClass, isSqlState, type SqlStateCode, UNAVAILABLE_SQLSTATE_CLASSES } from './sqlstate.ts';

const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  'EHOSTUNREACH',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ACQUIRE_TIMEOUT',
  'LOOKUP_TIMEOUT',
]);

export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_NODE_CODES.has(code)) return errors.serviceUnavailable(err);
    if (inSqlStateClass(code, UNAVAILABLE_SQLSTATE_CLASSES)) return errors.serviceUnavailable(err);
  }
  return errors.internal(err);
}

/** SQLSTATE of a driver error, when it has one (both postgres.js and PGlite expose `code`). */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && isSqlState(code) ? code : undefined;
}

/** Whether a driver error carries the SQLSTATE `code` (a name of sqlstate.ts' table). */
export const hasSqlState = (err: unknown, code: SqlStateCode): boolean => sqlState(err) === code;

/** The constraint a driver error names (postgres.js calls it `constraint_name`, PGlite `constraint`), or ''. On Citus
 *  a shard's constraint carries the shard's number after the name. */
export function violatedConstraint(err: unknown): string {
  const e = err as { constraint_name?: unknown; constraint?: unknown } | null;
  const name = e?.constraint_name ?? e?.constraint;
  return typeof name === 'string' ? name : '';
}
