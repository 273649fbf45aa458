// `npm run db:types`: writes src/infra/db/engine/tables.ts, the tables as Kysely sees them, from the migrations
// themselves (kysely-codegen reading an in-memory embedded database migrated from scratch). The types
// follow what the drivers return (src/infra/db/engine/database.ts): timestamptz as its ISO 8601 text, numeric and
// bigint as numbers, date and time as their text. test/db-types.test.ts fails while the file is stale.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate, PostgresDialect } from 'kysely-codegen';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { migrate } from '../src/infra/db/migrate/migrate.ts';

export const TABLES_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/infra/db/engine/tables.ts');

/** Columns whose values a domain type names more narrowly than their SQL type. */
const narrowed = {
  'accounts.plan_code': 'PlanCode',
  'accounts.modules': 'Generated<ModuleName[]>',
  'api_keys.mode': 'KeyMode',
  'idempotency_keys.state': `'in_progress' | 'done'`,
};

/** The file's text, formatted as the tree is (house style), so that comparing it with the committed one is exact. */
export async function tablesSource(): Promise<string> {
  const generated = await generatedSource();
  const biome = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../node_modules/.bin/biome');
  const formatted = spawnSync(biome, ['format', `--stdin-file-path=${TABLES_FILE}`], { input: generated, encoding: 'utf8' });
  if (formatted.status !== 0) throw new Error(`biome format of the generated tables: ${formatted.stderr}`);
  return formatted.stdout;
}

async function generatedSource(): Promise<string> {
  const database = await openDatabase({ databaseUrl: '', dataDir: 'memory://' });
  try {
    await migrate(database.db);
    return await generate({
      db: database.db as never, // kysely-codegen reads the catalogue, not our tables (and types Kysely from its CommonJS build)
      dialect: new PostgresDialect({ numericParser: 'number' as never, dateParser: 'string' as never }),
      typeMapping: {
        timestamptz: 'TimestampText',
        int8: 'number',
        date: 'string',
        time: 'string',
      },
      overrides: { columns: narrowed },
      customImports: {
        PlanCode: '../../../domain/plans.ts',
        ModuleName: '../../../domain/modules.ts',
        KeyMode: '../../../domain/api-keys.ts',
        TimestampText: './timestamp-text.ts',
      },
      excludePattern: 'schema_migrations',
      outFile: null,
      print: false,
    });
  } finally {
    await database.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(TABLES_FILE, await tablesSource());
  process.stdout.write(`wrote ${path.relative(process.cwd(), TABLES_FILE)}\n`);
}
