// What every command shares: configuration, opening (and migrating) the database for the
// duration of a command, printing exactly one JSON object with --json, and failing with a
// one-line message on stderr and a non-zero exit code.
import { operatorName } from '../accounts/operator-audit.ts';
import { type Config, loadConfig } from '../config.ts';
import type { Database } from '../infra/db/engine/database.ts';
import { isUuid } from '../schemas/formats.ts';

export class CliError extends Error {}

export interface CommandContext {
  config: Config;
}

export function commandContext(): CommandContext {
  return { config: loadConfig() };
}

/** Opens the database named by the configuration, migrates it, runs `fn`, closes it. */
export async function withDatabase<T>(
  config: Config,
  holder: string,
  fn: (database: Database) => Promise<T>,
  options: { readReplicas?: boolean } = {},
): Promise<T> {
  // Loaded here, not at the top: `balcao --help` and usage errors never load a database driver.
  const { openDatabase } = await import('../infra/db/engine/database.ts');
  const { prepareDatabase } = await import('../events/capture/setup.ts');
  // An operator's command (an import, an export) may run long statements on purpose: only the server's bounded.
  // Only a command that only reads (an export) opens the read replicas.
  const readDatabaseUrls = options.readReplicas ? config.readDatabaseUrls : [];
  const database = await openDatabase({ ...config, readDatabaseUrls, dbTimeouts: { ...config.dbTimeouts, statementMs: 0 } }, holder);
  try {
    await prepareDatabase(database);
    return await fn(database);
  } finally {
    await database.close();
  }
}

/** Who runs a command that changes something, for the audit log: --actor, BALCAO_ACTOR, or the OS user. */
export function actorOf(flags: { actor?: string }, config: Config): string {
  return operatorName(flags.actor, config.operatorActor);
}

/** Prints the JSON object alone with --json, else the human text. */
export function output(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human()}\n`);
}

export function fail(message: string, code = 1): never {
  process.stderr.write(`balcao: ${message.split('\n')[0]}\n`);
  process.exit(code);
}

export function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw new CliError(`${what} "${value}" is not a valid id (expected a UUID)`);
  return value;
}

export const splitList = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
