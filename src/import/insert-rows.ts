// Writes planned rows with multi-row INSERTs, each chunk under PostgreSQL's 65 535 bind
// parameters; the caller runs it inside one transaction, so a failure leaves nothing behind.
import { CompiledQuery } from 'kysely';
import type { Tenant } from '../http/context.ts';
import type { Db } from '../infra/db/database.ts';
import type { TableSpec } from './column-spec.ts';
import type { Row } from './plan-import.ts';

const MAX_BIND_PARAMETERS = 65_535;
/** Past a few thousand rows a longer statement only costs parse time and memory. */
const MAX_ROWS_PER_STATEMENT = 2_000;

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

export async function insertRows(
  tx: Db,
  table: string,
  spec: TableSpec,
  tenant: Tenant,
  rows: readonly Row[],
  onInserted: (count: number) => void = () => {},
): Promise<void> {
  // Tenant columns are bound once ($1, $2) and referenced by every row.
  const perRow = Math.max(1, spec.size);
  const chunkSize = Math.max(1, Math.min(MAX_ROWS_PER_STATEMENT, Math.floor((MAX_BIND_PARAMETERS - 2) / perRow)));
  for (let start = 0; start < rows.length; start += chunkSize) {
    const chunk = rows.slice(start, start + chunkSize);
    await tx.executeQuery(compileInsert(table, spec, tenant, chunk));
    onInserted(chunk.length);
  }
}

function compileInsert(table: string, spec: TableSpec, tenant: Tenant, rows: readonly Row[]): CompiledQuery {
  const present = new Set<string>();
  for (const row of rows) for (const column of Object.keys(row)) present.add(column);
  const columns = [...spec.values()].filter((c) => present.has(c.name));
  const parameters: unknown[] = [tenant.teamId, tenant.mode];
  const tuples: string[] = [];
  for (const row of rows) {
    const values = ['$1::uuid', '$2::text'];
    for (const column of columns) {
      const value = row[column.name];
      if (value === undefined) values.push('DEFAULT');
      else {
        parameters.push(value);
        values.push(`$${parameters.length}::${column.sqlType}`);
      }
    }
    tuples.push(`(${values.join(', ')})`);
  }
  const names = ['team_id', 'mode', ...columns.map((c) => c.name)].map(quote).join(', ');
  return CompiledQuery.raw(`INSERT INTO ${quote(table)} (${names}) VALUES ${tuples.join(', ')}`, parameters);
}
