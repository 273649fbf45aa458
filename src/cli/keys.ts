// `balcao keys create|revoke|list`: API keys. The secret is printed once, at creation.
import type { Command } from 'commander';
import { getAccount } from '../accounts/account-repository.ts';
import { createKey, getKey, KeyLimitError, listKeys, revokeKey, toKeyView } from '../accounts/key-repository.ts';
import { changedFields, recordAudit } from '../accounts/operator-audit.ts';
import { isValidIpRange } from '../domain/ip-allowlist.ts';
import { isValidScope } from '../domain/scopes.ts';
import { isCalendarDate, isTimestamp } from '../schemas/formats.ts';
import { actorOf, CliError, commandContext, output, requireUuid, splitList, withDatabase } from './runtime.ts';

interface CreateFlags {
  account: string;
  name: string;
  scopes?: string;
  test?: boolean;
  expiresAt?: string;
  allowedIps?: string;
  actor?: string;
  json?: boolean;
}

/** What the audit log records of a key: never its secret, its hash or its last characters. */
const AUDITED_FIELDS = ['name', 'prefix', 'scopes', 'expires_at', 'allowed_ips', 'revoked_at'] as const;
const ACTOR_HELP = 'the operator the audit log names (default: BALCAO_ACTOR, else the OS user)';

export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description('manage API keys');
  registerCreate(keys);
  registerRevoke(keys);
  registerList(keys);
}

/** The flags of `keys create`, checked: the command's words are refused before the database is opened. */
function checkedCreateFlags(flags: CreateFlags): { scopes: string[]; allowedIps: string[]; expiresAt: Date | null } {
  requireUuid(flags.account, 'account');
  if (!flags.name.trim()) throw new CliError('--name must not be empty');
  const scopes = flags.scopes ? splitList(flags.scopes) : [];
  const badScopes = scopes.filter((s) => !isValidScope(s));
  if (badScopes.length) throw new CliError(`invalid scope(s): ${badScopes.join(', ')} (expected <resource>:read|write, *:read or *:write)`);
  const allowedIps = flags.allowedIps ? splitList(flags.allowedIps) : [];
  const badIps = allowedIps.filter((ip) => !isValidIpRange(ip));
  if (badIps.length) throw new CliError(`invalid IP or CIDR range(s): ${badIps.join(', ')}`);
  let expiresAt: Date | null = null;
  if (flags.expiresAt !== undefined) {
    expiresAt = new Date(flags.expiresAt);
    if (!(isTimestamp(flags.expiresAt) || isCalendarDate(flags.expiresAt)) || Number.isNaN(expiresAt.getTime())) {
      throw new CliError(`--expires-at must be an ISO 8601 date-time, got "${flags.expiresAt}"`);
    }
  }
  return { scopes, allowedIps, expiresAt };
}

function registerCreate(keys: Command): void {
  keys
    .command('create')
    .description('create an API key (the secret is shown once)')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--name <text>', 'key name')
    .option('--scopes <list>', 'comma list: <resource>:read|write, *:read, *:write (default: none; /v1/me needs none)')
    .option('--test', 'a test-mode key (sandbox data)')
    .option('--expires-at <iso8601>', 'expiration instant (may lie in the past)')
    .option('--allowed-ips <list>', 'comma list of IPs and CIDR ranges (IPv4 and IPv6)')
    .option('--actor <name>', ACTOR_HELP)
    .option('--json', 'print one JSON object')
    .action(async (flags: CreateFlags) => {
      const { config } = commandContext();
      const { scopes, allowedIps, expiresAt } = checkedCreateFlags(flags);
      const actor = actorOf(flags, config);
      const created = await withDatabase(config, 'balcao keys create', async ({ db }) => {
        if (!(await getAccount(db, flags.account))) throw new CliError(`account ${flags.account} not found`);
        try {
          return await db.transaction().execute(async (tx) => {
            const made = await createKey(tx, {
              accountId: flags.account,
              name: flags.name,
              mode: flags.test ? 'test' : 'live',
              scopes,
              allowedIps,
              expiresAt,
              brand: config.keyBrand,
            });
            await recordAudit(tx, {
              actor,
              command: 'keys create',
              accountId: flags.account,
              targetType: 'api_key',
              targetId: made.row.id,
              changes: changedFields(undefined, toKeyView(made.row), AUDITED_FIELDS),
            });
            return made;
          });
        } catch (err) {
          if (err instanceof KeyLimitError) throw new CliError(err.message);
          throw err;
        }
      });
      const view = toKeyView(created.row);
      const result = {
        id: view.id,
        key: created.key,
        name: view.name,
        prefix: view.prefix,
        last4: view.last4,
        scopes: view.scopes,
        expires_at: view.expires_at,
        allowed_ips: view.allowed_ips,
      };
      output(!!flags.json, result, () =>
        [
          `key ${result.id} "${result.name}" (${result.prefix}) for account ${flags.account}`,
          `  scopes: ${result.scopes.join(', ') || '(none)'}`,
          `  secret (shown once, store it now): ${result.key}`,
        ].join('\n'),
      );
    });
}

function registerRevoke(keys: Command): void {
  keys
    .command('revoke')
    .description('revoke an API key (running servers stop accepting it within 5 seconds)')
    .argument('<key-id>', 'key id')
    .option('--actor <name>', ACTOR_HELP)
    .option('--json', 'print one JSON object')
    .action(async (id: string, flags: { actor?: string; json?: boolean }) => {
      const { config } = commandContext();
      requireUuid(id, 'key');
      const actor = actorOf(flags, config);
      const view = await withDatabase(config, 'balcao keys revoke', ({ db }) =>
        db.transaction().execute(async (tx) => {
          const before = await getKey(tx, id);
          const row = before && (await revokeKey(tx, id));
          if (!before || !row) throw new CliError(`key ${id} not found`);
          const after = toKeyView(row);
          await recordAudit(tx, {
            actor,
            command: 'keys revoke',
            accountId: row.account_id,
            targetType: 'api_key',
            targetId: id,
            changes: changedFields(toKeyView(before), after, AUDITED_FIELDS),
          });
          return after;
        }),
      );
      output(!!flags.json, view, () => `key ${view.id} "${view.name}" revoked at ${view.revoked_at}`);
    });
}

function registerList(keys: Command): void {
  keys
    .command('list')
    .description("list an account's keys (never their secrets)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print one JSON object')
    .action(async (flags: { account: string; json?: boolean }) => {
      const { config } = commandContext();
      requireUuid(flags.account, 'account');
      const data = await withDatabase(config, 'balcao keys list', async ({ db }) => {
        if (!(await getAccount(db, flags.account))) throw new CliError(`account ${flags.account} not found`);
        return (await listKeys(db, flags.account)).map(toKeyView);
      });
      output(!!flags.json, { data }, () =>
        data.length
          ? data
              .map(
                (k) =>
                  `${k.id} "${k.name}" ${k.prefix} …${k.last4} scopes=${k.scopes.join(',') || '-'}${k.revoked_at ? ' revoked' : ''}${k.expires_at ? ` expires=${k.expires_at}` : ''}`,
              )
              .join('\n')
          : 'no keys',
      );
    });
}
