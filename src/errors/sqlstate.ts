// The SQLSTATE codes this project reads, by what they mean to it: one table (PostgreSQL's appendix A names
// them), so no module tests a bare code string. A code is five characters; its first two are its class.

/** Single codes, by their PostgreSQL condition name. */
export const SQLSTATE = {
  /** A statement's own check failed (`1 / 0`): a per-process belief or a claim is no longer true (infra/db/statements/belief-check.ts). */
  divisionByZero: '22012',
  /** A unique index refused a row (a taken id, external id or idempotency key). */
  uniqueViolation: '23505',
  /** The statement ran past `statement_timeout` (or was cancelled). */
  queryCanceled: '57014',
  /** A table that does not exist (yet): maintenance of a table a migration has not made. */
  undefinedTable: '42P01',
  /** A statement the database does not support (Citus refusing now() over a column in an UPDATE). */
  featureNotSupported: '0A000',
  /** An object that exists already (a replication slot made by another process). */
  duplicateObject: '42710',
} as const;

export type SqlStateCode = (typeof SQLSTATE)[keyof typeof SQLSTATE];

/** Classes whose errors mean the database cannot serve now (503), not that the request or the code is wrong:
 *  connection, invalid authorization, missing database, insufficient resources, operator intervention
 *  (57014, a statement timeout, among them). */
export const UNAVAILABLE_SQLSTATE_CLASSES: readonly string[] = ['08', '28', '3D', '53', '57'];

const SQLSTATE_SHAPE = /^[0-9A-Z]{5}$/;

/** Whether `code` has the shape of a SQLSTATE (drivers put their own codes, such as ECONNRESET, in the same field). */
export const isSqlState = (code: string): boolean => SQLSTATE_SHAPE.test(code);

/** Whether the SQLSTATE `code` is of one of `classes`. */
export const inSqlStateClass = (code: string, classes: readonly string[]): boolean =>
  isSqlState(code) && classes.includes(code.slice(0, 2));
