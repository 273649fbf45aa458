// What one resource declares; the generic engines (list/get/create/update/delete) do the rest.
// The query side of a descriptor is the query layer's contract (query/contract.ts); the write
// side and the rules the write engine calls live here, beside it.
import type { TObject } from '@sinclair/typebox';
import type { AliasedRawBuilder, Compilable, CompiledQuery, RawBuilder } from 'kysely';
import type { ModuleName } from '../domain/modules.ts';
import type { ScopeResource } from '../domain/scopes.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { FieldError } from '../errors/app-error.ts';
import type { Db } from '../infra/db/engine/database.ts';
import type { FailureMeaning } from '../infra/db/statements/send-ahead.ts';
import type { Shaped, SqlShape } from '../infra/db/statements/sql-shape.ts';
import type { WriteTransaction } from '../infra/db/statements/write-transaction.ts';
import type { DeprecationNotice } from '../http/deprecation.ts';
import type { QueryableResource } from '../query/contract.ts';

import type { Row } from '../infra/db/engine/row.ts';

export type { Row };
export type Body = Record<string, unknown>;

export interface ResourceDescriptor extends QueryableResource {
  /** URL segment after /v1/ and the scope's resource name (`bank-accounts`). */
  name: ScopeResource;
  module: ModuleName;
  /** Write side, for the resources that accept writes: routes, OpenAPI and import follow from it. */
  write?: WriteDescriptor;
  /** Every route of the resource is deprecated (http/deprecation.ts): described so, answered with the headers. */
  deprecated?: DeprecationNotice;
  /** What `balcao import` and `balcao export` need beyond the table (its key is the name with `_`). */
  import?: ImportDescriptor;
  /** The object word of its event types (`customer.created`), when it is not the name less its plural `s`. */
  event?: string;
}

/** The object word of a resource's event types: `event`, else the name less its `s`, `-` as `_` (`bank-accounts` → `bank_account`). */
export const eventObjectOf = (d: Pick<ResourceDescriptor, 'name' | 'event'>): string =>
  d.event ?? d.name.replace(/s$/, '').replaceAll('-', '_');

/** A rule returns the reason a (non-null, well-typed) imported value is refused, or nothing. */
export type ValueRule = (value: unknown) => string | undefined;

export interface ImportDescriptor {
  /** Nested arrays of a record stored in their own table (`sales[].items`); `checked`: fields of the
   *  write schema's item whose rules the import applies besides its numeric bounds. */
  children?: Readonly<Record<string, { table: string; parentKey: string; checked?: readonly string[] }>>;
  /** Required columns the API fills in on create, filled the same way when the file leaves them out. */
  defaults?: Readonly<Record<string, () => unknown>>;
  /** Fields of the create schema whose rules the import applies besides its numeric bounds. */
  checked?: readonly string[];
  /** Rules of the import's own, by field. */
  rules?: Readonly<Record<string, ValueRule>>;
  /** Records of another table imported under their own key, right after this resource's. */
  alongside?: Readonly<Record<string, { table: string }>>;
}

/** The OpenAPI tag of a resource's operations: `bank-accounts` → `Bank accounts`. */
export function resourceTag(d: Pick<ResourceDescriptor, 'name'>): string {
  const words = d.name.replace('-', ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The resources whose descriptor has a write side, in the given order. */
export const writableOf = (resources: readonly ResourceDescriptor[]): readonly ResourceDescriptor[] => resources.filter((d) => d.write);

export interface WriteDescriptor {
  /** POST body (TypeBox): validation, `Static<>` types and OpenAPI. Fields it does not name are ignored. */
  create: TObject;
  /** PATCH body: the fields a PATCH may change, none required. */
  update: TObject;
  /** How DELETE soft-deletes: the column values it sets (the record is kept). A value may be a
   *  SQL fragment (sql`now()`), which the OpenAPI prose shows as its SQL text. */
  softDelete: Readonly<Record<string, unknown>>;
  /** The DELETE operation's summary in the API description (default: "Deactivate a record of <name>"). */
  deleteSummary?: string;
  /** Body fields naming records that must exist in the caller's tenant: field → table (else 422 `not_found`). */
  references?: Readonly<Record<string, string>>;
  /** Includes (names in `includes`) the POST response carries: a created sale answers with its items. */
  createIncludes?: readonly string[];
  /** Server-side rules the shared write engine calls at fixed points (cross-field checks, totals, numbering, history). */
  rules?: WriteRules;
}

/**
 * A creation as a value (write-engine.ts sends it): its main statement, what goes before it, and how its answer is
 * made. The write's uniform parts (its tail: origin mark, write-log entry, Idempotency-Key record) are added by the
 * engine, as CTEs of the main statement where the plan can carry them (`carriesTail`), else as a statement of their own.
 */
export interface CreationPlan {
  /** Sent ahead of `main`, in the same transaction (a sale's counter row locked). */
  before?: CompiledQuery;
  /** The INSERT: it answers the fields `answered.settled` names, or the whole row when there is no `answered`. */
  main(): CompiledQuery;
  /** What a failure of `main` means (default: itself). */
  meaning?: FailureMeaning;
  /** Rows of `createIncludes` the main statement writes too (a sale's items), all columns, in the include's order:
   *  a record answered from the returned row takes them, with no read back. */
  included?: IncludedRows;
  /**
   * The new row as the API answers it, known from the values before the database answers (its includes are
   * `included`): the creation then awaits nothing before its commit (one round trip). `settled`: the fields the
   * main statement settles (the sale's number), each as a later statement of the transaction reads it; until the
   * commit the record carries placeholders for them (send-ahead.ts).
   */
  answered?: { row: Row; settled: Readonly<Record<string, SqlShape<string>>> };
  /**
   * The same INSERT carrying the write's tail as more CTEs of its own statement: one statement fewer, whose bind,
   * plan set-up and end cost PostgreSQL about 70 µs per sale (docs/performance.md). It answers the tail's columns
   * beside the settled fields, which the tail reads as `settledInStatement` (the CTE's answer).
   */
  carriesTail?: {
    main(tail: Shaped<StatementTail>): CompiledQuery;
    settledInStatement: Readonly<Record<string, SqlShape<string>>>;
  };
}

/** A resource's own creation plans (a sale's), and whether its creations queue on their tenant's write lane
 *  (`onLane`: those whose plans await nothing before their commit, docs/performance.md). */
export interface CreationPlanner {
  onLane: boolean;
  plan(ctx: WriteContext, values: Row, body: Body): CreationPlan;
}

/** CTEs and answer columns a later part of a write (its event) adds to the statement that carries it. */
export interface StatementTail {
  ctes: (readonly [name: string, sql: RawBuilder<unknown>])[];
  columns: AliasedRawBuilder<unknown, string>[];
}

/** Rows written for a creation's includes, by include name (all columns). */
export type IncludedRows = Readonly<Record<string, readonly Row[]>>;

/** What a rule sees: the open transaction, the tenant and the clock. */
export interface WriteContext {
  /** The transaction's Kysely handle (`tx.db`). */
  trx: Db;
  /** The write transaction, for its driver abilities (`sendAhead`). */
  tx: WriteTransaction;
  tenant: Tenant;
  now: () => number;
  /** Whether the write may rely on what this process believes of the account, and fail with `WriteMustRunAgain`
   *  when that turned out wrong: false in a caller's transaction (an atomic batch), and when it runs again. */
  mayAssume: boolean;
}

export interface WriteRules {
  /** Cross-field checks a schema cannot say. `current` is the stored row on PATCH, undefined on POST.
   *  Runs even when the schema refused some fields, so it must not trust the body's types. */
  check?(body: Body, current: Row | undefined): FieldError[];
  /** The columns of the new row, from the validated body (defaults, computed values). Default: the body. */
  toInsert?(ctx: WriteContext, body: Body): Promise<Row> | Row;
  /** The creation's own plan (a sale's); default: its INSERT, answered with the row it returns. */
  planCreation?: CreationPlanner;
  /**
   * The default plan answers the new record from the values it inserts, not from the row the INSERT returns: the
   * creation then awaits nothing before its commit, and its INSERT carries the write's tail (one statement, one round
   * trip). Only for a table whose every column defaulting to something other than null is set by `toInsert`
   * (`created_at` from this process's clock, as a sale's), and whose columns store what they are sent as it is printed.
   */
  answersFromValues?: boolean;
  /** The columns a PATCH sets, from the body and the locked current row. Default: the body. */
  toUpdate?(ctx: WriteContext, body: Body, current: Row): Promise<Row> | Row;
  /** After a PATCH or DELETE changed the row, in its transaction (status history), on the locked path. */
  afterChange?(ctx: WriteContext, before: Row, after: Row): Promise<void>;
  /**
   * The columns a PATCH sets when they, and `check`, follow from the body alone, whatever the stored row holds: the
   * change is then one statement that does not read the row first (engines/change-statement.ts). Undefined: the
   * body needs the stored row (the locked path). Absent: every PATCH takes the locked path.
   */
  unreadUpdate?(body: Body): Row | undefined;
  /**
   * `afterChange` for a change made in one statement: a CTE over `changed`, the row as the UPDATE left it with
   * `before_<column>` for each column of `before` as it was.
   */
  changeFollowUp?: { before: readonly string[]; sql(db: Db, tenant: Tenant): Compilable };
}
