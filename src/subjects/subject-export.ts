// `balcao subjects export`: one JSON document with everything an account holds about one of its customers (LGPD
// art. 18, access): the customer record, their sales with items and status history, their appointments and deals.
import type { Db } from '../infra/db/engine/database.ts';
import type { Tenant } from '../domain/tenant.ts';
import { type SubjectRecords, subjectRecords } from './subject-records.ts';

export interface SubjectDocument extends SubjectRecords {
  account_id: string;
  mode: string;
  customer_id: string;
  exported_at: string;
}

export async function exportSubject(db: Db, tenant: Tenant, customerId: string): Promise<SubjectDocument | undefined> {
  // One snapshot: the rows of every table as of one moment.
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      const records = await subjectRecords(tx, tenant, customerId);
      if (!records) return undefined;
      return {
        account_id: tenant.accountId,
        mode: tenant.mode,
        customer_id: customerId,
        exported_at: new Date().toISOString(),
        ...records,
      };
    });
}
