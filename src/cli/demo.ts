// `balcao demo`: create (once) a demo account with every module and sample data in every
// resource, print a new `*:write` key, and serve.
import type { Command } from 'commander';
import { findDemoAccount } from '../accounts/account-repository.ts';
import { createKey } from '../accounts/key-repository.ts';
import { createDemoAccount } from '../demo/seed-demo-data.ts';
import { MODULES } from '../domain/modules.ts';
import { commandContext, output } from './runtime.ts';
import { loadServing, openMigrated, startServing } from './serve.ts';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('create (once) a demo account with sample data, print a new key, and serve')
    .option('--json', 'print one JSON object when listening (logs go to stderr)')
    .action(async (flags: { json?: boolean }) => {
      const { config } = commandContext();
      loadServing();
      const database = await openMigrated(config, 'balcao demo');
      const existing = await findDemoAccount(database.db);
      const created = !existing;
      const account =
        existing ??
        (await createDemoAccount(database, {
          name: 'Pet & Beleza Demo Ltda',
          plan_code: 'enterprise',
          modules: [...MODULES],
          is_demo: true,
        }));
      const { row, key } = await createKey(database.db, {
        accountId: account.id,
        name: `demo ${new Date().toISOString()}`,
        mode: 'live',
        scopes: ['*:write'],
        allowedIps: [],
        expiresAt: null,
        brand: config.keyBrand,
      });
      const listening = await startServing(config, database, !!flags.json);
      output(!!flags.json, { account_id: account.id, created, key_id: row.id, key, url: listening.url }, () =>
        [
          '',
          `Balcão demo ${created ? 'account created' : 'account reused'}: ${account.id}`,
          `API key (*:write): ${key}`,
          `Listening on ${listening.url}`,
          '',
          `Try:  curl -H "Authorization: Bearer ${key}" ${listening.url}/v1/me`,
          `      curl -H "Authorization: Bearer ${key}" "${listening.url}/v1/customers?limit=5"`,
          '',
        ].join('\n'),
      );
    });
}
