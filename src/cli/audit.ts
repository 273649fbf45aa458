// `balcao audit list [--account ID] [--since TIME]`: the operator audit log (migration 010), oldest first. Entries
// are written by the commands that change accounts, keys or a customer's personal data; none can be changed.
import type { Command } from 'commander';
import { listAudit } from '../accounts/operator-audit.ts';
import { isCalendarDate, isTimestamp } from '../schemas/formats.ts';
import { CliError, commandContext, output, requireUuid, withDatabase } from './runtime.ts';

export function registerAuditCommand(program: Command): void {
  const audit = program.command('audit').description('the operator audit log');
  audit
    .command('list')
    .description('list what operators changed, oldest first (never a secret or a key)')
    .option('--account <id>', 'only the entries of this account')
    .option('--since <time>', 'only the entries from this ISO 8601 date or date-time on')
    .option('--json', 'print one JSON object')
    .action(async (flags: { account?: string; since?: string; json?: boolean }) => {
      const { config } = commandContext();
      if (flags.account !== undefined) requireUuid(flags.account, 'account');
      let since: Date | undefined;
      if (flags.since !== undefined) {
        since = new Date(flags.since);
        if (!(isTimestamp(flags.since) || isCalendarDate(flags.since)) || Number.isNaN(since.getTime()))
          throw new CliError(`--since must be an ISO 8601 date or date-time, got "${flags.since}"`);
      }
      const data = await withDatabase(config, 'balcao audit list', ({ db }) => listAudit(db, { accountId: flags.account, since }));
      output(!!flags.json, { data }, () =>
        data.length
          ? data
              .map(
                (e) =>
                  `${e.at} ${e.actor} ${e.command} ${e.target_type} ${e.target_id ?? '-'}${e.account_id ? ` account=${e.account_id}` : ''} ${JSON.stringify(e.changes)}`,
              )
              .join('\n')
          : 'no audit entries',
      );
    });
}
