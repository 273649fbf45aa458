// `balcao subjects export|erase`: a customer's data-subject requests (LGPD art. 18). `export` writes one JSON
// document with everything the account holds about the person; `erase` anonymises them in one transaction and
// records it in the operator audit log (docs/audit-and-privacy.md, "Data-subject requests").
import fs from 'node:fs';
import type { Command } from 'commander';
import { getAccount } from '../accounts/account-repository.ts';
import { recordAudit } from '../accounts/operator-audit.ts';
import type { Tenant } from '../domain/tenant.ts';
import { eraseSubject } from '../subjects/subject-erasure.ts';
import { exportSubject } from '../subjects/subject-export.ts';
import { actorOf, CliError, commandContext, output, requireUuid, withDatabase } from './runtime.ts';

interface SubjectFlags {
  account: string;
  customer: string;
  test?: boolean;
  actor?: string;
  json?: boolean;
}

const ACTOR_HELP = 'the operator the audit log names (default: BALCAO_ACTOR, else the OS user)';

function subjectOf(flags: SubjectFlags): Tenant {
  requireUuid(flags.account, 'account');
  requireUuid(flags.customer, 'customer');
  return { accountId: flags.account, mode: flags.test ? 'test' : 'live' };
}

export function registerSubjectsCommand(program: Command): void {
  const subjects = program.command('subjects').description("a customer's data-subject requests (LGPD art. 18): access and erasure");

  subjects
    .command('export')
    .description('write everything the account holds about a customer as one JSON document')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--customer <id>', 'customer id')
    .option('--test', "a customer of the account's test mode")
    .option('--out <file>', 'write the document to this file (default: stdout)')
    .option('--actor <name>', ACTOR_HELP)
    .option('--json', 'with --out, print one JSON object describing what was written')
    .action(async (flags: SubjectFlags & { out?: string }) => {
      const { config } = commandContext();
      const tenant = subjectOf(flags);
      const actor = actorOf(flags, config);
      const document = await withDatabase(config, 'balcao subjects export', async ({ db }) => {
        if (!(await getAccount(db, tenant.accountId))) throw new CliError(`account ${tenant.accountId} not found`);
        const found = await exportSubject(db, tenant, flags.customer);
        if (!found) throw new CliError(`customer ${flags.customer} not found in account ${tenant.accountId} (${tenant.mode} mode)`);
        // Reading a person's data is recorded too (who saw it, and when); the entry names counts, never the data.
        await recordAudit(db, {
          actor,
          command: 'subjects export',
          accountId: tenant.accountId,
          targetType: 'customer',
          targetId: flags.customer,
          changes: { mode: tenant.mode, sales: found.sales.length, appointments: found.appointments.length, deals: found.deals.length },
        });
        return found;
      });
      const text = flags.json && !flags.out ? `${JSON.stringify(document)}\n` : `${JSON.stringify(document, null, 2)}\n`;
      if (!flags.out) {
        // The document is the one JSON object on stdout, with or without --json.
        process.stdout.write(text);
        return;
      }
      fs.writeFileSync(flags.out, text, { mode: 0o600 });
      const summary = {
        out: flags.out,
        customer_id: flags.customer,
        sales: document.sales.length,
        appointments: document.appointments.length,
        deals: document.deals.length,
      };
      output(
        !!flags.json,
        summary,
        () => `wrote ${flags.out}: the customer, ${summary.sales} sales, ${summary.appointments} appointments, ${summary.deals} deals`,
      );
    });

  subjects
    .command('erase')
    .description('anonymise a customer: personal fields and free text cleared, amounts and dates kept (one transaction)')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--customer <id>', 'customer id')
    .option('--test', "a customer of the account's test mode")
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--actor <name>', ACTOR_HELP)
    .option('--json', 'print one JSON object')
    .action(async (flags: SubjectFlags & { reason?: string }) => {
      const { config } = commandContext();
      const tenant = subjectOf(flags);
      const actor = actorOf(flags, config);
      const result = await withDatabase(config, 'balcao subjects erase', async (database) => {
        const { db } = database;
        if (!(await getAccount(db, tenant.accountId))) throw new CliError(`account ${tenant.accountId} not found`);
        // Events of changes made before the erasure are made first, so none is made after it with the person's data.
        const { capturedUpToNow } = await import('../events/capture/engine-capture.ts');
        if (!(await capturedUpToNow(database, 30_000)))
          process.stderr.write(
            'warning: the change capture has not caught up (is a server running?); events of earlier changes may still name the person\n',
          );
        const erased = await eraseSubject(db, tenant, flags.customer, { actor, reason: flags.reason });
        if (!erased) throw new CliError(`customer ${flags.customer} not found in account ${tenant.accountId} (${tenant.mode} mode)`);
        return erased;
      });
      output(!!flags.json, result, () =>
        result.changed
          ? `customer ${result.customer_id} anonymised: ${result.customer_fields.length} personal fields; free text cleared in ${Object.entries(
              result.cleared,
            )
              .map(([t, n]) => `${n} ${t}`)
              .join(', ')}; stored text redacted: ${Object.entries(result.redacted)
              .map(([t, n]) => `${n} ${t}`)
              .join(', ')}`
          : `customer ${result.customer_id} was anonymised already: nothing changed`,
      );
    });
}
