// `balcao webhooks list --account ID [--test]`: an account's webhook endpoints (never their secrets).
import type { Command } from 'commander';
import { getAccount } from '../accounts/account-repository.ts';
import { listEndpoints } from '../webhooks/endpoint-repository.ts';
import { CliError, commandContext, output, requireUuid, withDatabase } from './runtime.ts';

export function registerWebhooksCommand(program: Command): void {
  const webhooks = program.command('webhooks').description("inspect accounts' webhook endpoints");

  webhooks
    .command('list')
    .description("list an account's webhook endpoints (never their secrets)")
    .requiredOption('--account <id>', 'account id')
    .option('--test', 'the endpoints of the test mode')
    .option('--json', 'print one JSON object')
    .action(async (flags: { account: string; test?: boolean; json?: boolean }) => {
      const { config } = commandContext();
      requireUuid(flags.account, 'account');
      const mode = flags.test ? 'test' : 'live';
      const data = await withDatabase(config, 'balcao webhooks list', async ({ db }) => {
        if (!(await getAccount(db, flags.account))) throw new CliError(`account ${flags.account} not found`);
        return listEndpoints(db, { accountId: flags.account, mode });
      });
      output(!!flags.json, { data }, () =>
        data.length
          ? data
              .map(
                (e) =>
                  `${e.id} ${e.url} events=${e.enabled_events.join(',')}${e.excluded_key_ids.length ? ` excluded_keys=${e.excluded_key_ids.join(',')}` : ''} ${e.enabled ? 'enabled' : `disabled${e.disabled_reason ? ` (${e.disabled_reason})` : ''}`}`,
              )
              .join('\n')
          : `no webhook endpoints (${mode} mode)`,
      );
    });
}
