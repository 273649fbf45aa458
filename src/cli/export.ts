// `balcao export --account ID [--test] --format ndjson|csv|json --out DIR|FILE [--include-internal] [--json]`:
// writes every record of an account (live, or test-mode with --test) in a form `balcao import` reads back.
import type { Command } from 'commander';
import { EXPORT_FORMATS, type ExportFormat, type ExportResult, exportAccount } from '../export/export-account.ts';
import { DataTransferError } from '../import/import-error.ts';
import { terminalProgress } from '../import/progress.ts';
import { CliError, commandContext, output, requireUuid, withDatabase } from './runtime.ts';

interface ExportFlags {
  account: string;
  test?: boolean;
  format: string;
  out: string;
  includeInternal?: boolean;
  json?: boolean;
}

const describe = (result: ExportResult) => {
  const lines = [`exported account ${result.account_id} (${result.mode} data) as ${result.format} to ${result.files.join(', ')}:`];
  for (const [name, count] of Object.entries(result.counts)) lines.push(`  ${name}: ${count}`);
  for (const [name, count] of Object.entries(result.nested)) lines.push(`  ${name}: ${count}`);
  return lines.join('\n');
};

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description('write every record of an account to files balcao import reads back')
    .requiredOption('--account <id>', 'account id')
    .option('--test', "export the account's test-mode data")
    .requiredOption('--format <format>', EXPORT_FORMATS.join(' | '))
    .requiredOption('--out <path>', 'a directory (ndjson, csv) or a file (json, or ndjson ending in .ndjson)')
    .option('--include-internal', 'include the internal fields (contract_id, created_by, internal_notes)')
    .option('--json', 'print one JSON object')
    .action(async (flags: ExportFlags) => {
      const { config } = commandContext();
      requireUuid(flags.account, 'account');
      if (!(EXPORT_FORMATS as readonly string[]).includes(flags.format)) {
        throw new CliError(`--format must be one of ${EXPORT_FORMATS.join(', ')} (not "${flags.format}")`);
      }
      const progress = terminalProgress('exporting');
      try {
        const result = await withDatabase(
          config,
          'balcao export',
          async (database) => {
            try {
              // On a replica within the lag bound when there is one (an export has no key: no write of its own to wait for).
              await database.reads?.firstPoll;
              const { readRunner } = await import('../infra/db/replicas/read-router.ts');
              return await readRunner(database)(undefined, (db) =>
                exportAccount(db, {
                  accountId: flags.account,
                  mode: flags.test ? 'test' : 'live',
                  format: flags.format as ExportFormat,
                  out: flags.out,
                  includeInternal: !!flags.includeInternal,
                  onProgress: ({ rows, total }) => progress.update({ rows, bytes: rows, totalBytes: total }),
                }),
              );
            } finally {
              progress.finish();
            }
          },
          { readReplicas: true },
        );
        output(!!flags.json, result, () => describe(result));
      } catch (err) {
        if (err instanceof DataTransferError) throw new CliError(err.message);
        throw err;
      }
    });
}
