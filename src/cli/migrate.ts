// `balcao migrate`: create or upgrade the schema and exit.
import type { Command } from 'commander';
import { openDatabase } from '../infra/db/engine/database.ts';
import { prepareDatabase } from '../events/capture/setup.ts';
import { commandContext, output } from './runtime.ts';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('create or upgrade the schema and exit')
    .option('--json', 'print one JSON object')
    .action(async (flags: { json?: boolean }) => {
      const { config } = commandContext();
      const database = await openDatabase({ ...config, readDatabaseUrls: [] }, 'balcao migrate');
      try {
        const applied = await prepareDatabase(database);
        output(!!flags.json, { applied, database: database.engine }, () =>
          applied.length ? `applied ${applied.join(', ')}` : 'schema is up to date',
        );
      } finally {
        await database.close();
      }
    });
}
