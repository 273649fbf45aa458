// `balcao import --account ID [--test] FILE [--json]`: loads an import file (DECISIONS C) into
// an account's live data, or its test-mode data with --test. All or nothing.
import type { Command } from 'commander';
import { importData, type ImportResult } from '../import/import-data.ts';
import { terminalProgress } from '../import/progress.ts';
import { readImportFile } from '../import/read-import-file.ts';
import { commandContext, output, requireUuid, withDatabase } from './runtime.ts';

interface ImportFlags {
  account: string;
  test?: boolean;
  json?: boolean;
}

const describe = (result: ImportResult) => {
  const lines = [`imported into account ${result.account_id} (${result.mode} data):`];
  for (const [name, count] of Object.entries(result.counts)) lines.push(`  ${name}: ${count}`);
  for (const [name, count] of Object.entries(result.nested)) lines.push(`  ${name}: ${count}`);
  if (lines.length === 1) lines.push('  (the file has no resources)');
  return lines.join('\n');
};

export function registerImportCommand(program: Command): void {
  program
    .command('import')
    .description('load records (customers, sales, …) from a JSON file into an account, all or nothing')
    .argument('<file>', 'JSON object whose keys are resource names and values arrays of records')
    .requiredOption('--account <id>', 'account id')
    .option('--test', "load into the account's test-mode data")
    .option('--json', 'print one JSON object')
    .action(async (file: string, flags: ImportFlags) => {
      const { config } = commandContext();
      requireUuid(flags.account, 'account');
      const data = await readImportFile(file);
      const progress = terminalProgress();
      const result = await withDatabase(config, 'balcao import', async ({ db }) => {
        try {
          return await importData(db, data, { accountId: flags.account, mode: flags.test ? 'test' : 'live', onProgress: progress.update });
        } finally {
          progress.finish();
        }
      });
      output(!!flags.json, result, () => describe(result));
    });
}
