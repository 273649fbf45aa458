// `balcao import --account ID [--test] FILE|DIR [--max-errors N] [--json]`: streams records
// (a JSON object, NDJSON or CSV files, gzipped or not, or a directory of them) into an account's
// live data, or its test-mode data with --test. All or nothing.
import type { Command } from 'commander';
import { DataTransferError } from '../import/import-error.ts';
import { terminalProgress } from '../import/progress.ts';
import { findSources } from '../import/sources.ts';
import { DEFAULT_MAX_ERRORS, type ImportResult, importSources } from '../import/stream-import.ts';
import { CliError, commandContext, output, requireUuid, withDatabase } from './runtime.ts';

interface ImportFlags {
  account: string;
  test?: boolean;
  maxErrors: string;
  json?: boolean;
}

const describe = (result: ImportResult) => {
  const lines = [`imported into account ${result.account_id} (${result.mode} data):`];
  for (const [name, count] of Object.entries(result.counts)) lines.push(`  ${name}: ${count}`);
  for (const [name, count] of Object.entries(result.nested)) lines.push(`  ${name}: ${count}`);
  if (lines.length === 1) lines.push('  (the file has no resources)');
  return lines.join('\n');
};

/** Every error on the one stderr line the contract allows, the first one first. */
function oneLine(err: DataTransferError, maxErrors: number): string {
  const listed = err.issues.map((issue) => `${issue.path ? `${issue.path}: ` : ''}${issue.message}`).join('; ');
  return err.issues.length >= maxErrors && err.issues.length > 1 ? `${listed} (stopped after ${maxErrors} errors)` : listed;
}

export function registerImportCommand(program: Command): void {
  program
    .command('import')
    .description('load records (customers, sales, …) from JSON, NDJSON or CSV files into an account, all or nothing')
    .argument('<file>', 'a .json, .ndjson or .csv file (optionally .gz), or a directory of them')
    .requiredOption('--account <id>', 'account id')
    .option('--test', "load into the account's test-mode data")
    .option('--max-errors <n>', 'stop after this many errors, and list them', String(DEFAULT_MAX_ERRORS))
    .option('--json', 'print one JSON object')
    .action(async (file: string, flags: ImportFlags) => {
      const { config } = commandContext();
      requireUuid(flags.account, 'account');
      const maxErrors = Number(flags.maxErrors);
      if (!Number.isInteger(maxErrors) || maxErrors < 1)
        throw new CliError(`--max-errors must be a whole number of at least 1 (not "${flags.maxErrors}")`);
      try {
        const sources = await findSources(file);
        const progress = terminalProgress('importing');
        const result = await withDatabase(config, 'balcao import', async (database) => {
          try {
            return await importSources(database, sources, {
              accountId: flags.account,
              mode: flags.test ? 'test' : 'live',
              maxErrors,
              onProgress: progress.update,
            });
          } finally {
            progress.finish();
          }
        });
        output(!!flags.json, result, () => describe(result));
      } catch (err) {
        if (err instanceof DataTransferError) throw new CliError(oneLine(err, maxErrors));
        throw err;
      }
    });
}
