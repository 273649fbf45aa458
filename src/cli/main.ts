// The `balcao` command: one file per command, loaded only when that command runs, so each
// command pays for the modules it uses (`balcao --help` loads none of them).
import { Command, CommanderError } from 'commander';
import { DataDirInUseError } from '../infra/db/engine/data-dir-lock.ts';
import { CliError, fail } from './runtime.ts';

type Register = (program: Command) => void;

/** Every command: its one-line summary for `balcao --help`, and how to load it. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<Register> }> = {
  serve: {
    summary: 'migrate the schema if needed, then serve the API',
    load: async () => (await import('./serve.ts')).registerServeCommand,
  },
  migrate: { summary: 'create or upgrade the schema and exit', load: async () => (await import('./migrate.ts')).registerMigrateCommand },
  accounts: { summary: 'manage accounts (contracts)', load: async () => (await import('./accounts.ts')).registerAccountsCommand },
  keys: { summary: 'manage API keys', load: async () => (await import('./keys.ts')).registerKeysCommand },
  import: {
    summary: 'load records (customers, sales, …) from a file into an account',
    load: async () => (await import('./import.ts')).registerImportCommand,
  },
  webhooks: {
    summary: "list an account's webhook endpoints (never their secrets)",
    load: async () => (await import('./webhooks.ts')).registerWebhooksCommand,
  },
  export: {
    summary: 'write every record of an account to files balcao import reads back',
    load: async () => (await import('./export.ts')).registerExportCommand,
  },
  subjects: {
    summary: "a customer's data-subject requests (LGPD): export everything about them, or erase them",
    load: async () => (await import('./subjects.ts')).registerSubjectsCommand,
  },
  audit: {
    summary: 'list the operator audit log (who changed accounts, keys and personal data)',
    load: async () => (await import('./audit.ts')).registerAuditCommand,
  },
  demo: {
    summary: 'create (once) a demo account with sample data, print a new key, and serve',
    load: async () => (await import('./demo.ts')).registerDemoCommand,
  },
};

const program = new Command('balcao')
  .description('Balcão: the public REST API of the business-management platform, and its operator tools')
  .exitOverride()
  // A usage error is one line on stderr (DECISIONS A); `--help` shows the full usage.
  .configureOutput({
    writeErr: (text) => process.stderr.write(text),
    outputError: (text, write) => write(`balcao: ${(text.split('\n')[0] ?? '').replace(/^error: /, '')}\n`),
  });

/** The command named on the command line (`balcao keys …`, `balcao help keys`), if any. */
function requestedCommand(argv: string[]): string | undefined {
  const words = argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return name && Object.hasOwn(COMMANDS, name) ? name : undefined;
}

try {
  const requested = requestedCommand(process.argv);
  for (const [name, { summary, load }] of Object.entries(COMMANDS)) {
    if (name === requested) (await load())(program);
    // Any other command only needs a line in the listing: it is not loaded.
    else program.command(name).summary(summary).allowUnknownOption().allowExcessArguments();
  }
  if (requested) program.commands.find((command) => command.name() === requested)?.summary(COMMANDS[requested]!.summary);
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
