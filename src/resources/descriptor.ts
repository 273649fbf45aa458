// What one resource declares; the generic engines (list/get/create/update/delete) do the rest.
// The query side of a descriptor is the query layer's contract (query/contract.ts); the write
// side and the rules the write engine calls live here, beside it.
import type { TObject } from '@sinclair/typebox';
import type { AliasedRawBuilder, CompiledQuery, RawBuilder } from 'kysely';
import type { ModuleName } from '../domain/modules.ts';
import type { ScopeResource } from '../domain/scopes.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { FieldError } from '../errors/app-error.ts';
import type { Db } from '../infra/db/database.ts';
import type { FailureMeaning } from '../infra/db/send-ahead.ts';
import type { Shaped, SqlShape } from '../infra/db/sql-shape.ts';
import type { DeprecationNotice } from '../http/deprecation.ts';
import type { QueryableResource } from '../query/contract.ts';

import type { Row } from '../infra/db/row.ts';

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

/** An INSERT that settles some text fields of the new row, and how later statements read each field. */
export interface SettledInInsert {
  /** Sent ahead of `statement`, in the same transaction (a sale's counter row locked). */
  before?: CompiledQuery;
  /** Answers the new row with the fields it settled. */
  statement(): CompiledQuery;
  /** What a failure of `statement` means (default: itself). */
  meaning?: FailureMeaning;
  /** Each field as SQL reads it later in the same transaction. */
  fields: Readonly<Record<string, SqlShape<string>>>;
  /**
   * The same INSERT with a later part of the write (its event) as more CTEs of its own statement: one statement
   * fewer, whose bind, plan set-up and end cost PostgreSQL about 70 µs per sale (docs/performance.md). It answers
   * the tail's columns beside the settled fields, and `fields` become `fieldsInStatement` (the CTE's answer).
   */
  joined?: {
    fieldsInStatement: Readonly<Record<string, SqlShape<string>>>;
    statement(tail: Shaped<StatementTail>): CompiledQuery;
  };
  /** Rows of `createIncludes` the statement writes too (a sale's items), all columns, in the include's order:
   *  the answer is made from them and the inserted row, with no read back. */
  included?: IncludedRows;
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
  trx: Db;
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
  /**
   * The new record as the API answers it, made from the values inserted (`row`, with its id) when they fix
   * every field but those `settledInInsert` settles; undefined to read the row the insert returns instead. With
   * it, nothing of a creation is awaited before its commit: all its statements travel in one round trip.
   */
  answeredFromValues?(row: Row): Row | undefined;
  /**
   * The creation's INSERT when the resource writes it itself, because the database settles some text fields
   * of the new row in it (the sale's number, which locks the tenant's counter until commit). It answers the
   * settled fields, or the whole row with `returningAll` (when the answer is read from it); until then, the
   * record carries placeholders for them (send-ahead.ts). The same statement may write the rows that go with
   * the new one (a sale's items and first history entry), handing back those the answer includes.
   */
  settledInInsert?(ctx: WriteContext, row: Row, returningAll: boolean, body: Body): SettledInInsert;
  /** The columns a PATCH sets, from the body and the locked current row. Default: the body. */
  toUpdate?(ctx: WriteContext, body: Body, current: Row): Promise<Row> | Row;
  /** After a PATCH or DELETE changed the row, in its transaction (status history). */
  afterChange?(ctx: WriteContext, before: Row, after: Row): Promise<void>;
}
