// The one importer (`balcao import`, and the demo's sample data): reads records as a stream
// (files, or records built in memory), checks each one (planRecord), and loads rows through COPY
// inside one transaction, each row written as COPY text as soon as it is checked. Memory stays constant (a few megabytes of COPY
// text per table at a time, sent while the next are read); nothing is visible before the commit.
// Sale items and status history given on their own (`sale_items` records) go through a temporary
// staging table first, so they may come before their sale (a mixed NDJSON file) and their sale is
// checked to be in the account; nested in their sale, they are copied right after it.
import { sql } from 'kysely';
import type { Tenant } from '../domain/tenant.ts';
import type { KeyMode } from '../domain/api-keys.ts';
import { largerCountedNumber, TRANSACTION_COUNTER } from '../domain/numbering.ts';
import { SQLSTATE } from '../errors/sqlstate.ts';
import type { Database } from '../infra/db/engine/database.ts';
import { conditionScoped, conditionScopedSql, copyScoped, insertScopedText, TENANT_COLUMNS } from '../infra/db/tenancy/tenancy.ts';
import { isUuid } from '../schemas/formats.ts';
import { IMPORT_ORIGIN, markOriginText } from '../events/capture/setup.ts';
import { type BulkSession, inBulkTransaction, type OpenCopy } from './bulk-session.ts';
import { quoteIdentifier } from '../infra/db/engine/identifiers.ts';
import { type ColumnSpec, loadTableSpecs, type TableSpec } from './column-spec.ts';
import { copyValue } from './copy-text.ts';
import { DataTransferError } from './import-error.ts';
import { Issues, isoWithMicros, planRecord, type Row, type TableContext } from './plan-import.ts';
import { readRecords, type SourceRecord } from './read-records.ts';
import { type ImportRegistry, type ImportResource, type ImportResourceName, SERVED } from './resources.ts';
import { CHILD_RESOURCE_NAMES, type ImportSource } from './sources.ts';
import { timestampMs } from './validate-value.ts';

export interface ImportResult {
  account_id: string;
  mode: KeyMode;
  /** Records per resource key of the file. */
  counts: Partial<Record<ImportResourceName, number>>;
  /** Records of nested arrays, as `sales.items`. */
  nested: Record<string, number>;
}

export interface StreamImportOptions {
  accountId: string;
  mode: KeyMode;
  /** The resources to import (default: the served ones; a test gives the registry of its own resources). */
  registry?: ImportRegistry;
  /** Stop reading after this many errors (all are reported). */
  maxErrors?: number;
  onProgress?: (progress: StreamProgress) => void;
}

export interface StreamProgress {
  /** Rows written so far (nested rows included). */
  rows: number;
  /** Bytes read from disk so far, and in all (0 when unknown: a pipe). */
  bytes: number;
  totalBytes: number;
}

export const DEFAULT_MAX_ERRORS = 20;
/** COPY text per statement: large enough that a COPY's own cost vanishes, small enough to stay constant memory. */
const COPY_BATCH_BYTES = 2 << 20;
/** A group's first buffer: a few demo rows fit; megabytes per group (the batch's size) made the demo's
 *  dozens of small groups spend more time collecting garbage than copying. */
const FIRST_BUFFER_BYTES = 16 << 10;
/** A child resource given as its own file: its table and the nested name it counts under. */
const CHILD_FILES: Readonly<Record<string, { table: string; parentKey: string; nested: string }>> = {
  sale_items: { table: 'transaction_items', parentKey: 'transaction_id', nested: 'sales.items' },
  sale_status_history: { table: 'transaction_status_history', parentKey: 'transaction_id', nested: 'sales.status_history' },
};
/** Child table → its parent's table: a nested child's COPY waits for its parent's (foreign key). */
const parentTables = (registry: ImportRegistry) =>
  new Map(Object.values(registry.resources).flatMap((r) => Object.values(r.children ?? {}).map((c) => [c.table, r.table] as const)));
const staging = (table: string) => `import_${table}`;
const SOURCE_COLUMN: ColumnSpec = { name: 'import_at', kind: 'text', notNull: false, hasDefault: false, sqlType: 'text' };

interface Batch extends TableContext {
  /** Where each row of `rows` comes from, to name it when the database refuses it. */
  at: string[];
  /** Rows of child files, bound for the staging table. */
  staged: boolean;
}

/** A COPY is ended and another begun after this much text: the lines' sources (to name a refused row) are
 *  kept until its end, so this bounds their memory; a COPY's own cost is one round trip. */
const COPY_STREAM_BYTES = 8 << 20;

/** The COPY being fed, and the source of each of its lines so far. */
interface StreamedCopy {
  /** The target table and its columns: rows of another group need a COPY of their own. */
  key: string;
  table: string;
  stream: OpenCopy;
  at: string[];
  bytes: number;
  refused?: boolean;
}

/** Rows of one table carrying the same columns, as COPY text waiting to be sent. */
interface CopyGroup {
  table: string;
  /** The table, or its staging table. */
  target: string;
  staged: boolean;
  columns: ColumnSpec[];
  names: string[];
  /** COPY text as UTF-8, written line by line: off the JavaScript heap, so each line is short-lived garbage
   *  and the heap stays small (a string batch made the heap, and the RSS, swing by hundreds of megabytes). */
  text: Buffer;
  bytes: number;
  /** Where each line comes from, to name the row the database refuses. */
  at: string[];
}

/** Records as `balcao import` reads them from `sources` (files), into an existing account. */
export async function importSources(
  database: Database,
  sources: readonly ImportSource[],
  options: StreamImportOptions,
): Promise<ImportResult> {
  return importRecords(database, (run) => run.readSources(sources), options);
}

/** Records given as an import file's object (`{"customers": [...], ...}`), built in memory. */
export async function importObject(database: Database, file: ImportObject, options: StreamImportOptions): Promise<ImportResult> {
  return importRecords(database, () => objectRecords(file), options);
}

/** A JSON import file's object, as data built in code (DECISIONS C). */
export type ImportObject = Readonly<Record<string, readonly unknown[]>>;

type RecordsOf = (run: ImportRun) => AsyncIterable<SourceRecord> | Iterable<SourceRecord>;

async function importRecords(database: Database, records: RecordsOf, options: StreamImportOptions): Promise<ImportResult> {
  const { accountId, mode } = options;
  if (!isUuid(accountId)) throw DataTransferError.plain(`"${accountId}" is not an account id (expected a UUID)`);
  const account = await database.db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst();
  if (!account) throw DataTransferError.plain(`account ${accountId} not found`);
  const specs = await loadImportSpecs(database, options.registry);
  const run = new ImportRun(specs, mode, String(account.id), options);
  try {
    await inBulkTransaction(database.driver, (session) => run.execute(session, records(run)));
  } catch (err) {
    if (!(err instanceof DataTransferError)) throw err;
    throw await run.explain(database, err);
  }
  return run.result();
}

/** The column specs of every table an import writes (read once, before the transaction). */
export const loadImportSpecs = (database: Database, registry: ImportRegistry = SERVED): Promise<ImportSpecs> =>
  loadTableSpecs(database.db, registry.tables);
export type ImportSpecs = ReadonlyMap<string, TableSpec>;

/**
 * Imports `file` inside an open bulk session, for an account the caller vouches for (the demo
 * creates its account in the same transaction). A refusal throws the DataTransferError as it is.
 */
export async function importObjectInSession(
  session: BulkSession,
  specs: ImportSpecs,
  file: ImportObject,
  options: StreamImportOptions,
): Promise<ImportResult> {
  const run = new ImportRun(specs, options.mode, options.accountId, options);
  await run.execute(session, objectRecords(file));
  return run.result();
}

/** An import object's records in the order and form the JSON reader gives them. */
function* objectRecords(file: ImportObject): Generator<SourceRecord> {
  for (const [resource, records] of Object.entries(file)) {
    if (!Array.isArray(records)) {
      yield { resource, record: records, at: '', path: resource, event: 'not-array' };
      continue;
    }
    yield { resource, record: undefined, at: '', path: resource, event: 'start' };
    for (const [index, record] of records.entries()) yield { resource, record, at: '', path: `${resource}[${index}]` };
  }
}

class ImportRun {
  readonly counts: Partial<Record<ImportResourceName, number>> = {};
  readonly nested: Record<string, number> = {};
  private readonly issues: Issues;
  private readonly maxErrors: number;
  private readonly batches = new Map<string, Batch>();
  private readonly groups = new Map<string, CopyGroup>();
  private readonly tenant: Tenant;
  /** The tenant columns every COPY line starts with. */
  private readonly tenantPrefix: string;
  private readonly startMs = Date.now();
  private childSeq = 0;
  private maxTransactionNumber: bigint | null = null;
  /** Tables whose staging table this run has made (on its first staged row). */
  private readonly stagingTables = new Set<string>();
  private readonly registry: ImportRegistry;
  /** Child table → parent table. */
  private readonly parents: ReadonlyMap<string, string>;
  /** Every resource key a record may have: the registry's, and the sale children given on their own. */
  private readonly resourceNames: readonly string[];
  private pending: Promise<void> = Promise.resolve();
  /** The COPY being fed, kept open from one part to the next while they load the same columns. */
  private copy: StreamedCopy | undefined;
  private written = 0;
  private bytes = 0;
  private totalBytes = 0;
  /** Ids a unique key found taken (stored, or earlier in this import): which of the two is told after the rollback. */
  private readonly duplicates: { table: string; id: string; at: string }[] = [];

  constructor(
    private readonly specs: ReadonlyMap<string, TableSpec>,
    private readonly mode: KeyMode,
    private readonly accountId: string,
    private readonly options: StreamImportOptions,
  ) {
    this.maxErrors = Math.max(1, options.maxErrors ?? DEFAULT_MAX_ERRORS);
    this.issues = new Issues(this.maxErrors);
    this.tenant = { accountId, mode };
    this.tenantPrefix = copyScoped(this.tenant, []).linePrefix;
    this.registry = options.registry ?? SERVED;
    this.parents = parentTables(this.registry);
    this.resourceNames = [...this.registry.names, ...CHILD_RESOURCE_NAMES];
    for (const table of this.registry.tables) this.batches.set(table, this.newBatch(table, false));
    for (const { table } of Object.values(CHILD_FILES)) this.batches.set(staging(table), this.newBatch(table, true));
  }

  private newBatch(table: string, staged: boolean): Batch {
    return { table, spec: this.specs.get(table) as TableSpec, rows: [], at: [], staged, rules: this.registry.rules[table] ?? {} };
  }

  result(): ImportResult {
    return { account_id: this.accountId, mode: this.mode, counts: this.counts, nested: this.nested };
  }

  async *readSources(sources: readonly ImportSource[]): AsyncGenerator<SourceRecord> {
    this.totalBytes = sources.reduce((sum, s) => sum + s.size, 0);
    const specOf = (resource: string) => this.specs.get(this.registry.resources[resource]?.table ?? CHILD_FILES[resource]?.table ?? '');
    for (const source of sources) {
      if (source.resource) this.countFile(source.resource);
      yield* readRecords(source, specOf, (n) => this.addBytes(n));
    }
  }

  async execute(session: BulkSession, records: AsyncIterable<SourceRecord> | Iterable<SourceRecord>): Promise<void> {
    // Before any row: capture passes over the rest of the transaction undecoded (docs/events.md).
    const mark = markOriginText(this.tenant, IMPORT_ORIGIN);
    await session.query(mark.text, mark.params);
    try {
      for await (const record of records) {
        this.take(record);
        for (const batch of this.batches.values()) {
          if (batch.rows.length === 0) continue;
          const full = this.encode(batch);
          if (full) await this.flushAfterParents(session, full);
        }
        if (this.issues.total >= this.maxErrors) break;
      }
    } catch (err) {
      if (!(err instanceof DataTransferError)) throw err;
      for (const issue of err.issues) this.issues.add(issue.path, issue.message);
    }
    // Parents before children (groups are made in the order rows come); staged rows last.
    const tables = this.registry.tables;
    const rank = (g: CopyGroup) => (g.staged ? tables.length : 0) + tables.indexOf(g.table);
    for (const group of [...this.groups.values()].sort((a, b) => rank(a) - rank(b))) await this.flush(session, group);
    await this.endCopy();
    if (this.issues.total === 0) await this.moveStagedRows(session);
    if (this.issues.total > 0) throw new DataTransferError(this.issues.list, this.issues.total);
    // Another import may follow in the same transaction (the demo's live and test data).
    for (const table of this.stagingTables) await session.query(`DROP TABLE ${staging(table)}`);
    if (this.maxTransactionNumber !== null) {
      // New sales are numbered after the largest imported number (DECISIONS B.6).
      const counter = insertScopedText(
        'tenant_counters',
        this.tenant,
        { name: { value: TRANSACTION_COUNTER }, value: { value: this.maxTransactionNumber.toString(), cast: 'bigint' } },
        { columns: ['name'], action: 'DO UPDATE SET value = GREATEST(tenant_counters.value, EXCLUDED.value)' },
      );
      await session.query(counter.text, counter.params);
    }
    this.report();
  }

  private countFile(resource: string): void {
    const child = CHILD_FILES[resource];
    if (child) this.nested[child.nested] ??= 0;
    else if (this.registry.names.includes(resource)) this.countResource(resource);
  }

  private countResource(name: ImportResourceName): void {
    this.counts[name] ??= 0;
    for (const child of Object.keys(this.registry.resources[name]?.children ?? {})) this.nested[`${name}.${child}`] ??= 0;
  }

  private take({ resource, record, at, path, problems, event }: SourceRecord): void {
    const where = at ? `${at}: ${path}` : path;
    if (!this.resourceNames.includes(resource)) {
      // Named once per key of a JSON object (its records carry an index), once per line elsewhere.
      if (event !== undefined || path === resource) {
        this.issues.add(where, `unknown resource (expected some of ${this.resourceNames.join(', ')})`);
      }
      return;
    }
    if (event === 'not-array') {
      this.issues.add(where, 'must be an array of records');
      return;
    }
    const child = CHILD_FILES[resource];
    if (event === 'start') {
      this.countFile(resource);
      return;
    }
    for (const problem of problems ?? []) this.issues.add(`${where}.${problem.field}`, problem.message);
    if (problems?.length) return;
    if (child) {
      this.takeChild(resource, record, where);
      return;
    }
    const name = resource as ImportResourceName;
    this.countResource(name);
    this.counts[name] = (this.counts[name] ?? 0) + 1;
    const definition = this.registry.resources[name] as ImportResource;
    const batch = this.batches.get(definition.table) as Batch;
    const children = Object.entries(definition.children ?? {});
    const row = planRecord(this.issues, batch, record, where, this.mode, {
      defaults: definition.defaults,
      nested: children.map(([n]) => n),
    });
    if (!row) return;
    batch.at.push(where);
    if (definition.table === 'transactions')
      this.maxTransactionNumber = largerCountedNumber(this.maxTransactionNumber, row.transaction_number);
    for (const [childName, childTable] of children) {
      const list = (record as Record<string, unknown>)[childName];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list)) {
        this.issues.add(`${where}.${childName}`, 'must be an array');
        continue;
      }
      const base = row.created_at === undefined ? this.startMs : (timestampMs(row.created_at as string) as number);
      const childBatch = this.batches.get(childTable.table) as Batch;
      for (const [i, item] of list.entries()) {
        const childPath = `${where}.${childName}[${i}]`;
        const childRow = planRecord(this.issues, childBatch, item, childPath, this.mode, {
          parent: { child: childTable, id: row.id as string },
        });
        if (!childRow) continue;
        // Without timestamps, children keep the file's order: 1 µs apart from the parent's creation.
        if (childRow.created_at === undefined) childRow.created_at = isoWithMicros(base, i + 1);
        childBatch.at.push(childPath);
        this.nested[`${name}.${childName}`] = (this.nested[`${name}.${childName}`] ?? 0) + 1;
      }
    }
  }

  /** `sale_items` / `sale_status_history` records: a sale's child given on its own, keyed by `sale_id`. */
  private takeChild(resource: string, record: unknown, where: string): void {
    const child = CHILD_FILES[resource] as (typeof CHILD_FILES)[string];
    this.nested[child.nested] = (this.nested[child.nested] ?? 0) + 1;
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      this.issues.add(where, 'must be an object');
      return;
    }
    const { sale_id: saleId, ...fields } = record as Record<string, unknown>;
    if (saleId === undefined || saleId === null) {
      this.issues.add(`${where}.sale_id`, 'is required');
      return;
    }
    if (typeof saleId !== 'string' || !isUuid(saleId)) {
      this.issues.add(`${where}.sale_id`, 'must be a UUID');
      return;
    }
    const batch = this.batches.get(staging(child.table)) as Batch;
    const row = planRecord(this.issues, batch, fields, where, this.mode, {
      parent: { child: { table: child.table, parentKey: child.parentKey }, id: saleId.toLowerCase() },
    });
    if (!row) return;
    if (row.created_at === undefined) row.created_at = isoWithMicros(this.startMs, ++this.childSeq);
    batch.at.push(where);
  }

  /** Writes checked rows as COPY text, by table and set of columns; returns a group that is full. */
  private encode(batch: Batch): CopyGroup | undefined {
    let full: CopyGroup | undefined;
    for (const [index, row] of batch.rows.entries()) {
      let key = batch.staged ? staging(batch.table) : batch.table;
      for (const name in row) if (row[name] !== undefined) key += `,${name}`;
      const group = this.groups.get(key) ?? this.newGroup(key, batch, row);
      const at = batch.at[index] as string;
      let line = this.tenantPrefix;
      for (const column of group.columns) line += `\t${copyValue(column, row[column.name])}`;
      line = group.staged ? `${line}\t${copyValue(SOURCE_COLUMN, at)}\n` : `${line}\n`;
      // A UTF-16 unit is at most 3 UTF-8 bytes: grow (doubling) when the line might not fit.
      if (group.bytes + line.length * 3 > group.text.length) {
        const size = Math.max(group.bytes + line.length * 3, group.text.length * 2);
        group.text = Buffer.concat([group.text.subarray(0, group.bytes)], size);
      }
      group.bytes += group.text.write(line, group.bytes);
      group.at.push(at);
      if (group.bytes >= COPY_BATCH_BYTES) full = group;
    }
    batch.rows = [];
    batch.at = [];
    return full;
  }

  private newGroup(key: string, batch: Batch, row: Row): CopyGroup {
    const staged = batch.staged;
    const columns = [...batch.spec.values()].filter((c) => row[c.name] !== undefined);
    const group: CopyGroup = {
      table: batch.table,
      target: staged ? staging(batch.table) : batch.table,
      staged,
      columns,
      names: copyScoped(this.tenant, [...columns.map((c) => c.name), ...(staged ? ['import_at'] : [])]).columns,
      text: Buffer.allocUnsafe(FIRST_BUFFER_BYTES),
      bytes: 0,
      at: [],
    };
    this.groups.set(key, group);
    return group;
  }

  /** A nested child's parent row is in a group of its parent table: those go first. */
  private async flushAfterParents(session: BulkSession, group: CopyGroup): Promise<void> {
    const parent = group.staged ? undefined : this.parents.get(group.table);
    if (parent) for (const other of this.groups.values()) if (other.table === parent && !other.staged) await this.flush(session, other);
    await this.flush(session, group);
  }

  /** Sends a group's rows while the next rows are read: into the COPY already open when it loads the same
   *  columns of the same table, else into a new one. The previous part must be taken first. */
  private async flush(session: BulkSession, group: CopyGroup): Promise<void> {
    const text = group.text.subarray(0, group.bytes);
    const at = group.at;
    // As large as the last one: a large import allocates once per batch, a small group stays small.
    group.text = Buffer.allocUnsafe(group.text.length);
    group.bytes = 0;
    group.at = [];
    if (at.length === 0 || this.issues.total > 0) return;
    const key = `${group.target} ${group.names.join(',')}`;
    if (this.copy && (this.copy.key !== key || this.copy.bytes >= COPY_STREAM_BYTES)) await this.endCopy();
    else await this.pending;
    if (this.issues.total > 0) return;
    if (group.staged && !this.stagingTables.has(group.table)) {
      await this.endCopy();
      await session.query(
        `CREATE TEMP TABLE ${staging(group.table)} (LIKE ${quoteIdentifier(group.table)} INCLUDING DEFAULTS, import_at text) ON COMMIT DROP`,
      );
      this.stagingTables.add(group.table);
    }
    this.copy ??= { key, table: group.table, stream: session.openCopy(group.target, group.names), at: [], bytes: 0 };
    const copy = this.copy;
    for (const where of at) copy.at.push(where);
    copy.bytes += text.length;
    this.pending = copy.stream.write(text).then(
      () => {
        this.written += at.length;
        this.report();
      },
      (err) => this.copyRefused(copy, err),
    );
    // Awaited by the next flush or at the end; marked handled meanwhile, so a lost connection
    // during the next read surfaces there rather than as an unhandled rejection.
    this.pending.catch(() => {});
  }

  /** Ends the open COPY, once its last part is taken: the server then has every row, or has named the one it refused. */
  private async endCopy(): Promise<void> {
    const copy = this.copy;
    this.copy = undefined;
    await this.pending;
    if (!copy) return;
    await copy.stream.end().catch((err) => this.copyRefused(copy, err));
  }

  private copyRefused(copy: StreamedCopy, err: unknown): void {
    if (copy.refused) return; // the same refusal, seen by a write and by the end
    copy.refused = true;
    this.refused(err, copy.table, copy.at);
  }

  /** Names the row behind a database refusal during COPY (its line in the COPY), and the id a unique key found taken. */
  private refused(err: unknown, table: string, at: readonly string[]): void {
    const { code, message, detail, where } = err as { code?: string; message?: string; detail?: string; where?: string };
    if (!code) throw err;
    const line = Number(/COPY [^,]+, line (\d+)/.exec(where ?? '')?.[1]);
    const row = Number.isInteger(line) && line >= 1 && line <= at.length ? (at[line - 1] as string) : `${at[0]} … ${at.at(-1)}`;
    // The primary key ends with id (the tenant's columns first, migrations/005_citus_ready.sql): its last value.
    const taken = code === SQLSTATE.uniqueViolation ? /^Key \((?:\w+, )*id\)=\((?:[^,)]+, )*([^,)]+)\)/.exec(detail ?? '')?.[1] : undefined;
    if (taken) {
      this.duplicates.push({ table, id: taken, at: row });
      this.issues.add(`${row}.id`, 'duplicate id');
    } else {
      this.issues.add(row, `the database refused this ${table} row (${message})`);
    }
  }

  /** Staged children join their table once every sale is in: each must name a sale of the account, with an id not yet used. */
  private async moveStagedRows(session: BulkSession): Promise<void> {
    let analysedSales = false;
    for (const table of this.stagingTables) {
      // Neither the staging table nor the sales just copied are in the planner's statistics: without
      // them it scanned every sale for each staged row (minutes for 100 000 sales) instead of
      // looking each one up by its key. ANALYZE counts this transaction's own rows.
      await session.query(`ANALYZE ${staging(table)}`);
      if (!analysedSales) await session.query('ANALYZE transactions');
      analysedSales = true;
      const sale = conditionScoped(this.tenant, 'p', 1);
      const orphans = await session.query<{ import_at: string }>(
        // Joins, not correlated sub-selects, between the staging table and the account's tables: the
        // same anti join on PostgreSQL, and one Citus can plan (docs/scale-out.md).
        `SELECT s.import_at FROM ${staging(table)} s
         LEFT JOIN transactions p ON p.id = s.transaction_id AND ${sale.text}
         WHERE p.id IS NULL
         LIMIT ${this.maxErrors}`,
        sale.params,
      );
      // Only a child given on its own can miss its sale: a nested one is written with it.
      for (const { import_at } of orphans) this.issues.add(`${import_at}.sale_id`, 'no sale of the account has this id');
      if (orphans.length > 0) continue;
      const sameAccount = conditionScoped({ accountId: this.accountId }, 't', 1);
      const repeated = await session.query<{ import_at: string; first: string }>(
        `SELECT s.import_at, (SELECT min(d.import_at) FROM ${staging(table)} d WHERE d.id = s.id AND d.import_at <> s.import_at) AS first
         FROM ${staging(table)} s LEFT JOIN ${quoteIdentifier(table)} t ON ${sameAccount.text} AND t.id = s.id
         WHERE s.id IN (SELECT id FROM ${staging(table)} GROUP BY id HAVING count(*) > 1) OR t.id IS NOT NULL
         LIMIT ${this.maxErrors}`,
        sameAccount.params,
      );
      for (const { import_at, first } of repeated) {
        this.issues.add(`${import_at}.id`, first ? `duplicate id (also used by ${first})` : 'a record with this id already exists');
      }
      if (repeated.length > 0) continue;
      // The staged rows carry the tenant's columns, written by their COPY (copyScoped).
      const columns = [...(this.specs.get(table) as TableSpec).keys(), ...TENANT_COLUMNS].filter((c, i, all) => all.indexOf(c) === i);
      const list = columns.map(quoteIdentifier).join(', ');
      await session.query(`INSERT INTO ${quoteIdentifier(table)} (${list}) SELECT ${list} FROM ${staging(table)}`);
    }
  }

  /** After the rollback: says whether a refused id was already stored or used twice in the file. */
  async explain(database: Database, err: DataTransferError): Promise<DataTransferError> {
    if (this.duplicates.length === 0) return err;
    const messages = new Map<string, string>();
    for (const { table, id, at } of this.duplicates) {
      // The account's row by id, whatever its mode: ids are unique within an account.
      const { rows } =
        await sql`SELECT id FROM ${sql.table(table)} WHERE ${conditionScopedSql({ accountId: this.accountId })} AND id = ${id}`.execute(
          database.db,
        );
      const stored = rows.length > 0;
      messages.set(`${at}.id`, stored ? 'a record with this id already exists' : 'duplicate id (an earlier record of the import has it)');
    }
    return new DataTransferError(
      err.issues.map((issue) => ({ ...issue, message: messages.get(issue.path) ?? issue.message })),
      err.issues.length,
    );
  }

  private addBytes(n: number): void {
    this.bytes += n;
  }

  private report(): void {
    this.options.onProgress?.({ rows: this.written, bytes: this.bytes, totalBytes: this.totalBytes });
  }
}
