// Turns a parsed import file into rows per table, checking every record first: an invalid file
// imports nothing, and each refusal names the resource, the index and the field at fault.
import { randomUUID } from 'node:crypto';
import type { KeyMode } from '../domain/api-keys.ts';
import type { TableSpec } from './column-spec.ts';
import { ImportError, type ImportIssue } from './import-error.ts';
import {
  COLUMN_RULES,
  type ChildTable,
  IMPORT_RESOURCE_NAMES,
  IMPORT_RESOURCES,
  IMPORT_TABLES,
  type ImportResourceName,
  TENANT_COLUMNS,
} from './resources.ts';
import { checkValue, timestampMs } from './validate-value.ts';

/** Column → value to bind; a column left out takes the table's DEFAULT. Tenant columns are added on insert. */
export type Row = Record<string, unknown>;

export interface ImportPlan {
  /** Rows per table, in IMPORT_TABLES order (parents before children). */
  rows: Map<string, Row[]>;
  /** Ids the file gives, per table, with the path of the record (to name it if the id is taken). */
  givenIds: Map<string, Map<string, string>>;
  /** Records per resource key present in the file. */
  counts: Partial<Record<ImportResourceName, number>>;
  /** Records of nested arrays (`sales.items`), when the file has any of their parents. */
  nested: Record<string, number>;
  /** Largest numeric transaction_number imported (the counter continues after it). */
  maxTransactionNumber: bigint | null;
}

const MAX_REPORTED_ISSUES = 50;

export class Issues {
  readonly list: ImportIssue[] = [];
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
  rows: Row[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function planImport(file: unknown, specs: ReadonlyMap<string, TableSpec>, mode: KeyMode, now: Date = new Date()): ImportPlan {
  const issues = new Issues();
  const tables = new Map<string, TableContext>();
  for (const table of IMPORT_TABLES) {
    const spec = specs.get(table);
    if (!spec) throw new Error(`no column spec for table ${table}`);
    tables.set(table, { table, spec, ids: new Map(), rows: [] });
  }
  const table = (name: string) => tables.get(name) as TableContext;
  const plan: ImportPlan = { rows: new Map(), givenIds: new Map(), counts: {}, nested: {}, maxTransactionNumber: null };

  if (!isRecord(file)) throw ImportError.plain('the file must hold a JSON object whose keys are resource names');
  for (const key of Object.keys(file)) {
    if (!(IMPORT_RESOURCE_NAMES as readonly string[]).includes(key)) {
      issues.add(key, `unknown resource (expected some of ${IMPORT_RESOURCE_NAMES.join(', ')})`);
    }
  }

  for (const name of IMPORT_RESOURCE_NAMES) {
    if (!(name in file)) continue;
    const records = file[name];
    if (!Array.isArray(records)) {
      issues.add(name, 'must be an array of records');
      continue;
    }
    const resource = IMPORT_RESOURCES[name];
    const parent = table(resource.table);
    const children = Object.entries(resource.children ?? {});
    for (const [childName] of children) plan.nested[`${name}.${childName}`] = 0;
    plan.counts[name] = records.length;
    for (const [index, record] of records.entries()) {
      const path = `${name}[${index}]`;
      const row = planRecord(issues, parent, record, path, mode, { defaults: resource.defaults, nested: children.map(([n]) => n) });
      if (!row) continue;
      if (resource.table === 'transactions') trackTransactionNumber(plan, row.transaction_number);
      for (const [childName, child] of children) {
        const list = (record as Record<string, unknown>)[childName];
        if (list === undefined || list === null) continue;
        if (!Array.isArray(list)) {
          issues.add(`${path}.${childName}`, 'must be an array');
          continue;
        }
        const base = row.created_at === undefined ? now.getTime() : (timestampMs(row.created_at as string) as number);
        for (const [i, item] of list.entries()) {
          const childRow = planRecord(issues, table(child.table), item, `${path}.${childName}[${i}]`, mode, {
            parent: { child, id: row.id as string },
          });
          if (!childRow) continue;
          // Without timestamps, children keep the file's order: 1 µs apart from the parent's creation.
          if (childRow.created_at === undefined) childRow.created_at = isoWithMicros(base, i + 1);
          plan.nested[`${name}.${childName}`] = (plan.nested[`${name}.${childName}`] ?? 0) + 1;
        }
      }
    }
  }

  if (issues.total > 0) throw new ImportError(issues.list, issues.total);
  for (const ctx of tables.values()) {
    plan.rows.set(ctx.table, ctx.rows);
    plan.givenIds.set(ctx.table, ctx.ids ?? new Map());
  }
  return plan;
}

export interface RecordOptions {
  defaults?: Readonly<Record<string, () => unknown>>;
  /** Field names holding nested arrays (validated by the caller). */
  nested?: readonly string[];
  parent?: { child: ChildTable; id: string };
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
  const rules = COLUMN_RULES[ctx.table] ?? {};
  const parentKey = options.parent?.child.parentKey;
  // Per field, the hot path of a large import: no path string is built unless a field is refused.
  for (const field in record) {
    const value = record[field];
    // `undefined` (never in a JSON file, possible in data built in code) means absent.
    if (value === undefined || options.nested?.includes(field)) continue;
    // DECISIONS C: the account is the one named by --account; a team_id in the file is ignored.
    if (field === 'team_id') continue;
    if (field === 'mode') {
      if (value !== mode)
        issues.add(
          `${path}.${field}`,
          `the import targets ${mode} data (${mode === 'live' ? 'add --test for test-mode data' : 'drop --test for live data'})`,
        );
      continue;
    }
    if (field === parentKey) {
      if (value !== options.parent?.id) issues.add(`${path}.${field}`, 'must be the id of the record it is nested in');
      continue;
    }
    const column = ctx.spec.get(field);
    if (!column || (TENANT_COLUMNS as readonly string[]).includes(field)) {
      issues.add(`${path}.${field}`, 'unknown field');
      continue;
    }
    if (value === null) {
      // A NOT NULL column with a default takes the default; one without is required.
      if (!column.notNull) row[field] = null;
      else if (!column.hasDefault && !options.defaults?.[field]) issues.add(`${path}.${field}`, 'is required and must not be null');
      continue;
    }
    const checked = checkValue(column, value);
    if (!checked.ok) {
      issues.add(`${path}.${field}`, checked.reason);
      continue;
    }
    const reason = rules[field]?.(value);
    if (reason) {
      issues.add(`${path}.${field}`, reason);
      continue;
    }
    row[field] = checked.value;
  }
  for (const column of ctx.spec.values()) {
    if (row[column.name] !== undefined || !column.notNull || column.hasDefault) continue;
    if (column.name === 'id' || column.name === parentKey || (TENANT_COLUMNS as readonly string[]).includes(column.name)) continue;
    const fill = options.defaults?.[column.name];
    if (fill) row[column.name] = fill();
    else if (record[column.name] === undefined) issues.add(`${path}.${column.name}`, 'is required');
  }
  if (issues.total > before) return undefined;

  if (row.id === undefined) row.id = randomUUID();
  else {
    const id = (row.id as string).toLowerCase();
    row.id = id;
    const first = ctx.ids?.get(id);
    if (first) {
      issues.add(`${path}.id`, `duplicate id (already used by ${first})`);
      return undefined;
    }
    ctx.ids?.set(id, path);
  }
  if (parentKey && options.parent) row[parentKey] = options.parent.id;
  ctx.rows.push(row);
  return row;
}

function trackTransactionNumber(plan: ImportPlan, value: unknown): void {
  plan.maxTransactionNumber = largerTransactionNumber(plan.maxTransactionNumber, value);
}

/** The larger of `current` and `value` when `value` is a number the counter continues after. */
export function largerTransactionNumber(current: bigint | null, value: unknown): bigint | null {
  // Numbers of up to 18 digits, as the counter (src/domain/numbering.ts) reads stored ones.
  if (typeof value !== 'string' || !/^\d{1,18}$/.test(value)) return current;
  const n = BigInt(value);
  return current === null || n > current ? n : current;
}

export function isoWithMicros(baseMs: number, micros: number): string {
  const at = new Date(baseMs + Math.floor(micros / 1000)).toISOString();
  return `${at.slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`;
}
