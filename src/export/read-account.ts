// Reads every record of one account (live or test data) in pages, table by table, with the
// import's field names: what `balcao export` writes and `balcao import` reads back. Timestamps
// keep their microseconds, so a round trip keeps every order the API shows.
import type { Tenant } from '../domain/tenant.ts';
import { sql } from 'kysely';
import type { KeyMode } from '../domain/api-keys.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { selectScoped, TENANT_COLUMNS } from '../infra/db/tenancy/tenancy.ts';
import { loadTableSpecs, type TableSpec } from '../import/column-spec.ts';
import {
  IMPORT_RESOURCE_NAMES,
  IMPORT_RESOURCES,
  IMPORT_TABLES,
  type ImportResource,
  type ImportResourceName,
} from '../import/resources.ts';

/** Stored, never shown by the API (DECISIONS C): exported only with --include-internal. */
export const INTERNAL_FIELDS = ['contract_id', 'created_by', 'internal_notes'] as const;

export type ExportRecord = Record<string, unknown>;

/** What one export file or section holds: a resource, or a sale's children on their own (keyed by `sale_id`). */
export interface ExportSection {
  name: string;
  table: string;
  /** For children: the column naming the parent, written as `sale_id`. */
  parentKey?: string;
  /** Field names in file order. */
  fields: string[];
}

export const PAGE_ROWS = 2_000;

export class AccountReader {
  private constructor(
    private readonly db: Db,
    private readonly specs: ReadonlyMap<string, TableSpec>,
    private readonly tenant: Tenant,
    private readonly includeInternal: boolean,
  ) {}

  static async open(db: Db, accountId: string, mode: KeyMode, includeInternal: boolean): Promise<AccountReader> {
    return new AccountReader(db, await loadTableSpecs(db, IMPORT_TABLES), { accountId, mode }, includeInternal);
  }

  /** Resources in import order, then the sale children as their own sections. */
  sections(): ExportSection[] {
    const sections: ExportSection[] = IMPORT_RESOURCE_NAMES.map((name) => {
      const table = (IMPORT_RESOURCES[name] as ImportResource).table;
      return { name, table, fields: this.columns(table) };
    });
    const children = IMPORT_RESOURCES.sales?.children ?? {};
    for (const [name, child] of Object.entries(children)) {
      const fields = this.columns(child.table).map((c) => (c === child.parentKey ? 'sale_id' : c));
      sections.push({ name: `sale_${name}`, table: child.table, parentKey: child.parentKey, fields });
    }
    return sections;
  }

  /** Nested arrays of a resource in the JSON format (`sales` → items, status_history). */
  nestedOf(name: ImportResourceName): { field: string; table: string; parentKey: string }[] {
    return Object.entries(IMPORT_RESOURCES[name]?.children ?? {}).map(([field, child]) => ({ field, ...child }));
  }

  async count(table: string): Promise<number> {
    const row = await selectScoped(this.db, table, this.tenant).select(sql<number>`count(*)::int`.as('n')).executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Every row of `table` in the tenant, in pages ordered by id. */
  async *pages(section: ExportSection): AsyncGenerator<ExportRecord[]> {
    let after: string | null = null;
    for (;;) {
      let page = selectScoped(this.db, section.table, this.tenant).select(this.selectList(section.table, section.parentKey));
      if (after !== null) page = page.where('id', '>', sql<string>`${after}::uuid`);
      const rows: ExportRecord[] = await page.orderBy('id').limit(PAGE_ROWS).execute();
      if (rows.length === 0) return;
      yield rows;
      if (rows.length < PAGE_ROWS) return;
      after = String(rows.at(-1)?.id);
    }
  }

  /** Children of the given parents, grouped by parent id, each group in the API's order (created_at, id). */
  async childrenOf(table: string, parentKey: string, parentIds: readonly string[]): Promise<Map<string, ExportRecord[]>> {
    const groups = new Map<string, ExportRecord[]>();
    if (parentIds.length === 0) return groups;
    const rows: ExportRecord[] = await selectScoped(this.db, table, this.tenant)
      .select(this.selectList(table, parentKey))
      .where(
        sql<boolean>`${sql.ref(parentKey)} IN (SELECT value::uuid FROM json_array_elements_text(${JSON.stringify(parentIds)}::text::json))`,
      )
      .orderBy(parentKey)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    for (const row of rows) {
      const parent = String(row.sale_id);
      delete row.sale_id;
      const group = groups.get(parent);
      if (group) group.push(row);
      else groups.set(parent, [row]);
    }
    return groups;
  }

  private columns(table: string): string[] {
    const hidden = new Set<string>([...TENANT_COLUMNS, ...(this.includeInternal ? [] : INTERNAL_FIELDS)]);
    return [...(this.specs.get(table) as TableSpec).keys()].filter((c) => !hidden.has(c));
  }

  private selectList(table: string, parentKey?: string) {
    const spec = this.specs.get(table) as TableSpec;
    return this.columns(table).map((name) => {
      const column = sql.ref(name);
      const as = name === parentKey ? 'sale_id' : name;
      if (spec.get(name)?.kind === 'timestamp') return sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(as);
      return column.as(as);
    });
  }
}
