// Turns one imported record into a row of its table, checking every field: each refusal names
// the resource, the index and the field at fault.
import { randomUUID } from 'node:crypto';
import type { KeyMode } from '../domain/api-keys.ts';
import type { TableSpec } from './column-spec.ts';
import type { TransferIssue } from './import-error.ts';
import { ACCOUNT_COLUMN } from '../infra/db/tenancy/tenancy.ts';
import { COLUMN_RULES, type ChildTable, TENANT_COLUMNS, type ValueRule } from './resources.ts';
import { checkValue } from './validate-value.ts';

import type { Row } from '../infra/db/engine/row.ts';

export type { Row };

const MAX_REPORTED_ISSUES = 50;

export class Issues {
  readonly list: TransferIssue[] = [];
  total = 0;
  constructor(private readonly limit = MAX_REPORTED_ISSUES) {}
  add(path: string, message: string): void {
    this.total++;
    if (this.list.length < this.limit) this.list.push({ path, message });
  }
}

export interface TableContext {
  table: string;
  spec: TableSpec;
  /** Ids seen so far (id → path), to name an in-file duplicate; the streamed import leaves it out
   *  (the primary key finds duplicates there, in constant memory). */
  ids?: Map<string, string>;
  /** Rules beyond the column types (default: the served registry's for the table). */
  rules?: Readonly<Record<string, ValueRule>>;
  rows: Row[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface RecordOptions {
  defaults?: Readonly<Record<string, () => unknown>>;
  /** Field names holding nested arrays (validated by the caller). */
  nested?: readonly string[];
  parent?: { child: ChildTable; id: string };
}

/** What every field of one record is checked against. */
interface RecordScope {
  ctx: TableContext;
  rules: Readonly<Record<string, ValueRule>>;
  mode: KeyMode;
  options: RecordOptions;
  parentKey: string | undefined;
}

export function planRecord(
  issues: Issues,
  ctx: TableContext,
  record: unknown,
  path: string,
  mode: KeyMode,
  options: RecordOptions,
): Row | undefined {
  if (!isRecord(record)) {
    issues.add(path, 'must be an object');
    return undefined;
  }
  const before = issues.total;
  const row: Row = {};
  const scope: RecordScope = {
    ctx,
    rules: ctx.rules ?? COLUMN_RULES[ctx.table] ?? {},
    mode,
    options,
    parentKey: options.parent?.child.parentKey,
  };
  // Per field, the hot path of a large import: no path string is built unless a field is refused.
  for (const field in record) {
    const value = record[field];
    // `undefined` (never in a JSON file, possible in data built in code) means absent.
    // DECISIONS C: the account is the one named by --account; an account column in the file is ignored.
    if (value === undefined || options.nested?.includes(field) || field === ACCOUNT_COLUMN) continue;
    const refusal = planField(scope, row, field, value);
    if (refusal) issues.add(`${path}.${field}`, refusal);
  }
  fillRequired(issues, scope, record, row, path);
  if (issues.total > before || !settleId(issues, ctx, row, path)) return undefined;
  if (scope.parentKey && options.parent) row[scope.parentKey] = options.parent.id;
  ctx.rows.push(row);
  return row;
}

/** Puts `field`'s checked value into `row`; or says why it is refused. */
function planField(scope: RecordScope, row: Row, field: string, value: unknown): string | undefined {
  const { mode, options, parentKey } = scope;
  if (field === 'mode')
    return value === mode
      ? undefined
      : `the import targets ${mode} data (${mode === 'live' ? 'add --test for test-mode data' : 'drop --test for live data'})`;
  if (field === parentKey) return value === options.parent?.id ? undefined : 'must be the id of the record it is nested in';
  const column = scope.ctx.spec.get(field);
  if (!column || (TENANT_COLUMNS as readonly string[]).includes(field)) return 'unknown field';
  if (value === null) {
    // A NOT NULL column with a default takes the default; one without is required.
    if (!column.notNull) row[field] = null;
    else if (!column.hasDefault && !options.defaults?.[field]) return 'is required and must not be null';
    return undefined;
  }
  const checked = checkValue(column, value);
  if (!checked.ok) return checked.reason;
  const reason = scope.rules[field]?.(value);
  if (reason) return reason;
  row[field] = checked.value;
  return undefined;
}

/** Required columns the record left out: filled by their default maker, or refused. */
function fillRequired(issues: Issues, { ctx, options, parentKey }: RecordScope, record: Record<string, unknown>, row: Row, path: string) {
  for (const column of ctx.spec.values()) {
    if (row[column.name] !== undefined || !column.notNull || column.hasDefault) continue;
    if (column.name === 'id' || column.name === parentKey || (TENANT_COLUMNS as readonly string[]).includes(column.name)) continue;
    const fill = options.defaults?.[column.name];
    if (fill) row[column.name] = fill();
    else if (record[column.name] === undefined) issues.add(`${path}.${column.name}`, 'is required');
  }
}

/** A new id for a record without one; a given id in lower case, refused when the file used it already. */
function settleId(issues: Issues, ctx: TableContext, row: Row, path: string): boolean {
  if (row.id === undefined) {
    row.id = randomUUID();
    return true;
  }
  const id = (row.id as string).toLowerCase();
  row.id = id;
  const first = ctx.ids?.get(id);
  if (first) {
    issues.add(`${path}.id`, `duplicate id (already used by ${first})`);
    return false;
  }
  ctx.ids?.set(id, path);
  return true;
}

/** The larger of `current` and `value` when `value` is a number the counter continues after. */
export function isoWithMicros(baseMs: number, micros: number): string {
  const at = new Date(baseMs + Math.floor(micros / 1000)).toISOString();
  return `${at.slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`;
}
