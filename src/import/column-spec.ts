// The column types the import validates against, read from the database catalogue: the
// migrations are the one description of the data model, so nothing here repeats them.
import { sql } from 'kysely';
import type { Db } from '../infra/db/engine/database.ts';
import { textBound } from '../schemas/bounds.ts';
import type { FieldKind } from '../schemas/common.ts';

export interface ColumnSpec {
  name: string;
  kind: FieldKind;
  /** NOT NULL in the table. */
  notNull: boolean;
  /** The table fills it when the insert leaves it out (DEFAULT …). */
  hasDefault: boolean;
  /** numeric(precision, scale): the largest absolute value is below 10^(precision - scale). */
  precision?: number;
  scale?: number;
  /** Integer columns: the inclusive range of the column type. */
  min?: number;
  max?: number;
  /** Text and text[] columns: the longest value (an element's, for text[]) in characters, the API's bound. */
  maxLength?: number;
  /** Database type used to cast bound parameters (`uuid`, `numeric`, `text[]`, …). */
  sqlType: string;
}

export type TableSpec = ReadonlyMap<string, ColumnSpec>;

interface CatalogueRow {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
  numeric_precision: number | null;
  numeric_scale: number | null;
}

const INTEGER_RANGES: Record<string, [number, number]> = {
  smallint: [-32_768, 32_767],
  integer: [-2_147_483_648, 2_147_483_647],
  bigint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

export async function loadTableSpecs(db: Db, tables: readonly string[]): Promise<Map<string, TableSpec>> {
  const { rows } = await sql<CatalogueRow>`
    SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default, numeric_precision, numeric_scale
    FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ANY(${[...tables]}::text[])
    ORDER BY table_name, ordinal_position`.execute(db);
  const specs = new Map<string, Map<string, ColumnSpec>>();
  for (const row of rows) {
    const table = specs.get(row.table_name) ?? new Map<string, ColumnSpec>();
    specs.set(row.table_name, table);
    table.set(row.column_name, toColumnSpec(row));
  }
  for (const table of tables) if (!specs.has(table)) throw new Error(`table ${table} is missing: run balcao migrate`);
  return specs;
}

function toColumnSpec(row: CatalogueRow): ColumnSpec {
  const base = { name: row.column_name, notNull: row.is_nullable === 'NO', hasDefault: row.column_default !== null };
  const range = INTEGER_RANGES[row.data_type];
  if (range) return { ...base, kind: 'integer', min: range[0], max: range[1], sqlType: row.data_type };
  switch (row.data_type) {
    case 'uuid':
      return { ...base, kind: 'uuid', sqlType: 'uuid' };
    case 'text':
    case 'character varying':
      return { ...base, kind: 'text', maxLength: textBound(row.table_name, row.column_name), sqlType: 'text' };
    case 'numeric':
      return {
        ...base,
        kind: 'number',
        precision: row.numeric_precision ?? undefined,
        scale: row.numeric_scale ?? undefined,
        sqlType: 'numeric',
      };
    case 'double precision':
    case 'real':
      return { ...base, kind: 'number', sqlType: row.data_type };
    case 'boolean':
      return { ...base, kind: 'boolean', sqlType: 'boolean' };
    case 'date':
      return { ...base, kind: 'date', sqlType: 'date' };
    case 'time without time zone':
      return { ...base, kind: 'time', sqlType: 'time' };
    case 'timestamp with time zone':
      return { ...base, kind: 'timestamp', sqlType: 'timestamptz' };
    case 'jsonb':
    case 'json':
      return { ...base, kind: 'json', sqlType: row.data_type };
    case 'ARRAY':
      if (row.udt_name === '_text') {
        return { ...base, kind: 'text_array', maxLength: textBound(row.table_name, row.column_name), sqlType: 'text[]' };
      }
      break;
  }
  throw new Error(`column ${row.table_name}.${row.column_name} has a type the import does not handle (${row.data_type})`);
}
