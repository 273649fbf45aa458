// One customer's records in an account (one mode): the customer row and everything that names them — their sales
// with items and status history, their appointments and their deals. Read by the export and by the erasure.
import type { Db } from '../infra/db/engine/database.ts';
import { selectScoped } from '../infra/db/tenancy/tenancy.ts';
import type { Tenant } from '../domain/tenant.ts';

type Row = Record<string, unknown>;

export interface SubjectRecords {
  customer: Row;
  sales: (Row & { items: Row[]; status_history: Row[] })[];
  appointments: Row[];
  deals: Row[];
}

/** The customer's records, or undefined when the tenant has no such customer. Rows in a stable order. */
export async function subjectRecords(db: Db, tenant: Tenant, customerId: string): Promise<SubjectRecords | undefined> {
  const customer = await selectScoped(db, 'customers', tenant).selectAll().where('id', '=', customerId).executeTakeFirst();
  if (!customer) return undefined;
  const sales: Row[] = await selectScoped(db, 'transactions', tenant)
    .selectAll()
    .where('customer_id', '=', customerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const saleIds = sales.map((s) => s.id as string);
  const [items, history, appointments, deals] = await Promise.all([
    saleIds.length
      ? selectScoped(db, 'transaction_items', tenant)
          .selectAll()
          .where('transaction_id', 'in', saleIds)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : [],
    saleIds.length
      ? selectScoped(db, 'transaction_status_history', tenant)
          .selectAll()
          .where('transaction_id', 'in', saleIds)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : [],
    selectScoped(db, 'appointments', tenant)
      .selectAll()
      .where('customer_id', '=', customerId)
      .orderBy('appointment_date')
      .orderBy('id')
      .execute(),
    selectScoped(db, 'deals', tenant).selectAll().where('customer_id', '=', customerId).orderBy('created_at').orderBy('id').execute(),
  ]);
  return {
    customer,
    sales: sales.map((sale) => ({
      ...sale,
      items: items.filter((i: Row) => i.transaction_id === sale.id),
      status_history: history.filter((h: Row) => h.transaction_id === sale.id),
    })),
    appointments,
    deals,
  };
}
