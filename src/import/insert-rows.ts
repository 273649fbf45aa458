// Writes planned rows in batches: each statement inserts up to 5 000 rows sent as one JSON array
// (json_to_recordset), so a batch costs one small parse and three bind parameters whatever its
// width. The caller runs it inside one transaction: a failure leaves nothing behind.
//
// Why not INSERT … VALUES with one bind parameter per value (chunks under PostgreSQL's 65 535):
// PGlite 0.4 crashes decoding the statement description of large statements with array
// parameters (from ~20 000 parameters on), and the JSON form costs the same on both engines.
// Rows that leave different columns out are inserted by shape, so every column a record leaves
// out takes the table's DEFAULT, exactly as in a single-row INSERT.
import { CompiledQuery } from 'kysely';
import type { Tenant } from '../domain/tenant.ts';
import type { Db } from '../infra/db/database.ts';
import type { TableSpec } from './column-spec.ts';
import type { Row } from './plan-import.ts';

const MAX_ROWS_PER_STATEMENT = 5_000;
/** Keeps each statement's JSON (and the engine's copy of it) to a few megabytes. */
const MAX_JSON_CHARS_PER_STATEMENT = 4_000_000;

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

export async function insertRows(
  tx: Db,
  table: string,
  spec: TableSpec,
  tenant: Tenant,
  rows: readonly Row[],
  onInserted: (count: number) => void = () => {},
): Promise<void> {
  let batch: { row: Row; json: string }[] = [];
  let chars = 0;
  const flush = async () => {
    for (const [shape, members] of groupByShape(batch)) {
      await tx.executeQuery(compileInsert(table, spec, tenant, shape, members));
    }
    onInserted(batch.length);
    batch = [];
    chars = 0;
  };
  for (const row of rows) {
    const json = JSON.stringify(row);
    if (batch.length > 0 && (batch.length >= MAX_ROWS_PER_STATEMENT || chars + json.length > MAX_JSON_CHARS_PER_STATEMENT)) await flush();
    batch.push({ row, json });
    chars += json.length + 1;
  }
  if (batch.length > 0) await flush();
}

/** Rows of one batch grouped by the set of columns they carry. */
function groupByShape(batch: readonly { row: Row; json: string }[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const { row, json } of batch) {
    const shape = Object.keys(row)
      .filter((k) => row[k] !== undefined)
      .sort()
      .join(',');
    const members = groups.get(shape);
    if (members) members.push(json);
    else groups.set(shape, [json]);
  }
  return groups;
}

function compileInsert(table: string, spec: TableSpec, tenant: Tenant, shape: string, members: readonly string[]): CompiledQuery {
  const present = new Set(shape.split(','));
  const columns = [...spec.values()].filter((c) => present.has(c.name));
  const names = columns.map((c) => quote(c.name));
  const definitions = columns.map((c) => `${quote(c.name)} ${c.sqlType}`);
  const text =
    `INSERT INTO ${quote(table)} (team_id, mode, ${names.join(', ')}) ` +
    `SELECT $1::uuid, $2::text, ${names.map((n) => `r.${n}`).join(', ')} ` +
    `FROM json_to_recordset($3::text::json) AS r(${definitions.join(', ')})`;
  return CompiledQuery.raw(text, [tenant.teamId, tenant.mode, `[${members.join(',')}]`]);
}
