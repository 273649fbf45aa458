// `balcao accounts create|update|list`: contracts (plan, modules, API switch, read-only rule,
// rate-limit adjustments).
import { type Command, Option } from 'commander';
import {
  type AccountInput,
  createAccount,
  getAccount,
  listAccounts,
  toAccountView,
  updateAccount,
} from '../accounts/account-repository.ts';
import { changedFields, recordAudit } from '../accounts/operator-audit.ts';
import { isModuleName, MODULES, type ModuleName } from '../domain/modules.ts';
import { isPlanCode, PLAN_CODES, type RateLimitOverrides } from '../domain/plans.ts';
import { actorOf, CliError, commandContext, output, requireUuid, splitList, withDatabase } from './runtime.ts';

interface AccountFlags {
  name?: string;
  plan?: string;
  modules?: string;
  readOnly?: boolean;
  apiDisabled?: boolean;
  apiEnabled?: boolean;
  rateLimits?: string;
  actor?: string;
  json?: boolean;
}

/** What the audit log compares before and after an account command: the view, less its id. */
const AUDITED_FIELDS = ['name', 'plan_code', 'modules', 'api_enabled', 'read_only', 'rate_limits'] as const;

const RATE_LIMIT_NAMES: Record<string, keyof RateLimitOverrides> = {
  burst: 'burst_per_second',
  read: 'requests_per_minute_read',
  write: 'requests_per_minute_write',
  day: 'requests_per_day_total',
};

export function parseModules(value: string): ModuleName[] {
  if (value.trim() === 'all') return [...MODULES];
  const names = splitList(value);
  const unknown = names.filter((n) => !isModuleName(n));
  if (unknown.length) throw new CliError(`unknown module(s): ${unknown.join(', ')} (valid: ${MODULES.join(', ')}, or all)`);
  return names as ModuleName[];
}

export function parseRateLimits(value: string): Partial<RateLimitOverrides> {
  const overrides: Partial<RateLimitOverrides> = {};
  for (const pair of splitList(value)) {
    const [name, raw] = pair.split('=', 2).map((s) => s.trim());
    const column = RATE_LIMIT_NAMES[name ?? ''];
    if (!column) throw new CliError(`unknown rate limit "${name}" (valid: burst, read, write, day)`);
    const n = Number(raw);
    if (!raw || !Number.isInteger(n) || n < 1) throw new CliError(`rate limit ${name} must be a positive integer, got "${raw ?? ''}"`);
    overrides[column] = n;
  }
  return overrides;
}

function toInput(flags: AccountFlags): AccountInput {
  const input: AccountInput = {};
  if (flags.name !== undefined) {
    if (!flags.name.trim()) throw new CliError('--name must not be empty');
    input.name = flags.name;
  }
  if (flags.plan !== undefined) {
    if (!isPlanCode(flags.plan)) throw new CliError(`unknown plan "${flags.plan}" (valid: ${PLAN_CODES.join(', ')})`);
    input.plan_code = flags.plan;
  }
  if (flags.modules !== undefined) input.modules = parseModules(flags.modules);
  if (flags.readOnly !== undefined) input.read_only = flags.readOnly;
  if (flags.apiDisabled && flags.apiEnabled) throw new CliError('--api-disabled and --api-enabled contradict each other');
  if (flags.apiDisabled) input.api_enabled = false;
  if (flags.apiEnabled) input.api_enabled = true;
  if (flags.rateLimits !== undefined) input.rate_limit_overrides = parseRateLimits(flags.rateLimits);
  return input;
}

const describe = (a: ReturnType<typeof toAccountView>) =>
  [
    `account ${a.id} "${a.name}"`,
    `  plan: ${a.plan_code}${a.read_only ? ' (read-only)' : ''}, API ${a.api_enabled ? 'enabled' : 'disabled'}`,
    `  modules: ${a.modules.join(', ') || '(none)'}`,
    `  rate limits: ${a.rate_limits.burst_per_second}/s, ${a.rate_limits.requests_per_minute_read} reads/min, ${a.rate_limits.requests_per_minute_write} writes/min, ${a.rate_limits.requests_per_day_total}/day`,
  ].join('\n');

function contractOptions(command: Command): Command {
  return command
    .addOption(new Option('--plan <plan>', 'plan tier').choices([...PLAN_CODES]))
    .option('--modules <list>', `comma list of modules (${MODULES.join(', ')}) or "all"`)
    .option('--read-only', 'the plan allows reads only')
    .option('--no-read-only', 'the plan allows writes')
    .option('--api-disabled', 'disable the API for the account')
    .option('--rate-limits <list>', 'contract adjustments: burst=N,read=N,write=N,day=N')
    .option('--actor <name>', 'the operator the audit log names (default: BALCAO_ACTOR, else the OS user)')
    .option('--json', 'print one JSON object');
}

export function registerAccountsCommand(program: Command): void {
  const accounts = program.command('accounts').description('manage accounts (contracts)');

  contractOptions(accounts.command('create').description('create an account').requiredOption('--name <text>', 'account name')).action(
    async (flags: AccountFlags) => {
      const { config } = commandContext();
      const input = toInput(flags);
      const actor = actorOf(flags, config);
      const view = await withDatabase(config, 'balcao accounts create', ({ db }) =>
        db.transaction().execute(async (tx) => {
          const created = toAccountView(await createAccount(tx, { ...input, name: input.name as string }));
          await recordAudit(tx, {
            actor,
            command: 'accounts create',
            accountId: created.id,
            targetType: 'account',
            targetId: created.id,
            changes: changedFields(undefined, created, AUDITED_FIELDS),
          });
          return created;
        }),
      );
      output(!!flags.json, view, () => describe(view));
    },
  );

  contractOptions(
    accounts
      .command('update')
      .description('change an account')
      .argument('<id>', 'account id')
      .option('--name <text>', 'account name')
      .option('--api-enabled', 'enable the API for the account'),
  ).action(async (id: string, flags: AccountFlags) => {
    const { config } = commandContext();
    requireUuid(id, 'account');
    const input = toInput(flags);
    const actor = actorOf(flags, config);
    const view = await withDatabase(config, 'balcao accounts update', ({ db }) =>
      db.transaction().execute(async (tx) => {
        const before = await getAccount(tx, id);
        const row = before && (await updateAccount(tx, id, input));
        if (!before || !row) throw new CliError(`account ${id} not found`);
        const after = toAccountView(row);
        await recordAudit(tx, {
          actor,
          command: 'accounts update',
          accountId: id,
          targetType: 'account',
          targetId: id,
          changes: changedFields(toAccountView(before), after, AUDITED_FIELDS),
        });
        return after;
      }),
    );
    output(!!flags.json, view, () => describe(view));
  });

  accounts
    .command('list')
    .description('list accounts')
    .option('--json', 'print one JSON object')
    .action(async (flags: { json?: boolean }) => {
      const { config } = commandContext();
      const data = await withDatabase(config, 'balcao accounts list', async ({ db }) => (await listAccounts(db)).map(toAccountView));
      output(!!flags.json, { data }, () => (data.length ? data.map(describe).join('\n') : 'no accounts'));
    });
}
