// `importData`: loads a parsed import file (DECISIONS C) into one account's live or test data.
// Validate everything, then write everything in one transaction: all or nothing.
import { sql } from 'kysely';
import type { KeyMode } from '../domain/api-keys.ts';
import { TRANSACTION_COUNTER } from '../domain/numbering.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { Db } from '../infra/db/database.ts';
import { loadTableSpecs, type TableSpec } from './column-spec.ts';
import { ImportError } from './import-error.ts';
import { insertRows } from './insert-rows.ts';
import { type ImportPlan, planImport } from './plan-import.ts';
import { IMPORT_TABLES, type ImportResourceName } from './resources.ts';

export interface ImportOptions {
  accountId: string;
  mode: KeyMode;
  /** Called as the import goes (for a progress bar): once when validation starts, then as rows are written. */
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportProgress {
  phase: 'validating' | 'writing';
  /** Rows written so far (0 while validating). */
  done: number;
  /** Records of the file while validating; rows to write (nested ones included) while writing. */
  total: number;
}

export interface ImportResult {
  account_id: string;
  mode: KeyMode;
  /** Records per resource key of the file. */
  counts: Partial<Record<ImportResourceName, number>>;
  /** Records of nested arrays, as `sales.items`. */
  nested: Record<string, number>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ID_LOOKUP_CHUNK = 10_000;

/**
 * Validates `file` and writes it. Given a transaction (`db.isTransaction`), it writes in it and
 * leaves commit or rollback to the caller; given the database, it opens its own.
 */
export async function importData(db: Db, file: unknown, options: ImportOptions): Promise<ImportResult> {
  const { accountId, mode } = options;
  if (!UUID.test(accountId)) throw ImportError.plain(`"${accountId}" is not an account id (expected a UUID)`);
  const account = await db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst();
  if (!account) throw ImportError.plain(`account ${accountId} not found`);

  const specs = await loadTableSpecs(db, IMPORT_TABLES);
  options.onProgress?.({ phase: 'validating', done: 0, total: topLevelRecords(file) });
  const plan = planImport(file, specs, mode);
  const tenant: Tenant = { teamId: String(account.id), mode };
  const write = (tx: Db) => writePlan(tx, plan, specs, tenant, options.onProgress);
  if (db.isTransaction) await write(db);
  else await db.transaction().execute(write);
  return { account_id: tenant.teamId, mode, counts: plan.counts, nested: plan.nested };
}

async function writePlan(
  tx: Db,
  plan: ImportPlan,
  specs: ReadonlyMap<string, TableSpec>,
  tenant: Tenant,
  onProgress: ImportOptions['onProgress'],
): Promise<void> {
  await refuseTakenIds(tx, plan);
  const total = [...plan.rows.values()].reduce((sum, rows) => sum + rows.length, 0);
  let done = 0;
  onProgress?.({ phase: 'writing', done, total });
  for (const [table, rows] of plan.rows) {
    await insertRows(tx, table, specs.get(table) as TableSpec, tenant, rows, (n) => {
      done += n;
      onProgress?.({ phase: 'writing', done, total });
    });
  }
  if (plan.maxTransactionNumber !== null) {
    // New sales are numbered after the largest imported number (DECISIONS B.6).
    await sql`
      INSERT INTO tenant_counters (team_id, mode, name, value)
      VALUES (${tenant.teamId}, ${tenant.mode}, ${TRANSACTION_COUNTER}, ${plan.maxTransactionNumber.toString()}::bigint)
      ON CONFLICT (team_id, mode, name) DO UPDATE SET value = GREATEST(tenant_counters.value, EXCLUDED.value)`.execute(tx);
  }
}

function topLevelRecords(file: unknown): number {
  if (typeof file !== 'object' || file === null) return 0;
  return Object.values(file).reduce((sum: number, list) => sum + (Array.isArray(list) ? list.length : 0), 0);
}

/** Ids are global primary keys: name the record whose id is already stored (in any account, without saying which). */
async function refuseTakenIds(tx: Db, plan: ImportPlan): Promise<void> {
  for (const [table, ids] of plan.givenIds) {
    const all = [...ids.keys()];
    for (let start = 0; start < all.length; start += ID_LOOKUP_CHUNK) {
      const chunk = all.slice(start, start + ID_LOOKUP_CHUNK);
      const taken = await tx
        .selectFrom(table)
        .select('id')
        .where(sql<boolean>`id IN (SELECT value::uuid FROM json_array_elements_text(${JSON.stringify(chunk)}::text::json))`)
        .executeTakeFirst();
      if (taken) throw ImportError.at(`${ids.get(String(taken.id))}.id`, 'a record with this id already exists');
    }
  }
}
