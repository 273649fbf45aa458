// The `balcao` command: one file per command, registered here from an explicit list.
import { Command, CommanderError } from 'commander';
import { DataDirInUseError } from '../infra/db/data-dir-lock.ts';
import { registerAccountsCommand } from './accounts.ts';
import { registerDemoCommand } from './demo.ts';
import { registerExportCommand } from './export.ts';
import { registerImportCommand } from './import.ts';
import { registerKeysCommand } from './keys.ts';
import { registerMigrateCommand } from './migrate.ts';
import { CliError, fail } from './runtime.ts';
import { registerServeCommand } from './serve.ts';

const program = new Command('balcao')
  .description('Balcão: the public REST API of the business-management platform, and its operator tools')
  .exitOverride()
  // A usage error is one line on stderr (DECISIONS A); `--help` shows the full usage.
  .configureOutput({
    writeErr: (text) => process.stderr.write(text),
    outputError: (text, write) => write(`balcao: ${(text.split('\n')[0] ?? '').replace(/^error: /, '')}\n`),
  });

registerServeCommand(program);
registerMigrateCommand(program);
registerAccountsCommand(program);
registerKeysCommand(program);
registerImportCommand(program);
registerExportCommand(program);
registerDemoCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exit(err.exitCode);
  }
  if (err instanceof CliError || err instanceof DataDirInUseError) fail(err.message);
  const code = (err as { code?: string }).code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND') fail(`cannot reach the database: ${(err as Error).message}`);
  fail(err instanceof Error ? err.message : String(err));
}
