// Deals and their funnel stages (SPEC 2.5): deals restrict their filter operators; the stages are
// one fixed list read outside the query language.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { requireTenant, selectScoped } from '../../infra/db/tenancy/tenancy.ts';
import { filtersFor } from '../../query/contract.ts';
import { outputRow } from '../../query/output.ts';
import { rowMeta } from '../../query/row-meta.ts';
import type { ResourceDescriptor, Row } from '../descriptor.ts';

export const dealRow = Type.Object(
  {
    id: F.uuid(),
    customer_id: F.uuid(),
    stage_id: F.uuid(),
    status: F.text({ examples: ['open'] }),
    origin_channel: F.text({ examples: ['whatsapp'] }),
    estimated_value: F.numberOrNull(),
    assigned_to_user_id: F.uuidOrNull(),
    lost_reason: F.textOrNull(),
    quote_transaction_id: F.uuidOrNull(),
    won_transaction_id: F.uuidOrNull(),
    entered_stage_at: F.timestamp(),
    closed_at: F.timestampOrNull(),
    created_at: F.timestamp(),
    updated_at: F.timestamp(),
  },
  { title: 'Deal' },
);

export const dealStageRow = Type.Object(
  {
    id: F.uuid(),
    name: F.text(),
    color: F.textOrNull({ description: 'Hexadecimal', examples: ['#22aa55'] }),
    position: F.integer(),
    milestone: F.textOrNull({ examples: ['won'] }),
    is_active: F.booleanOrNull(),
  },
  { title: 'DealStage' },
);

export const deals: ResourceDescriptor = {
  name: 'deals',
  table: 'deals',
  import: { alongside: { deal_stages: { table: 'deal_stages' } } },
  module: 'crm_funil',
  row: dealRow,
  filters: filtersFor(dealRow, ['status', 'stage_id', 'customer_id'], { status: ['eq', 'in'], stage_id: ['eq'], customer_id: ['eq'] }),
  sorts: ['created_at', 'updated_at', 'entered_stage_at', 'closed_at'],
};

/** `GET /v1/deals/stages`: the whole funnel in one item envelope, by position. */
export const dealStages = { table: 'deal_stages', row: dealStageRow, orderBy: 'position', max: 100 } as const;

/** The deal funnel: every stage of the tenant by position (at most 100), no query language. */
export async function listDealStages(db: Db, tenant: Tenant | null): Promise<Row[]> {
  const meta = rowMeta(dealStages.row);
  const rows = (await selectScoped(db, dealStages.table, requireTenant(tenant, 'read'))
    .select(meta.fields as string[])
    .orderBy(dealStages.orderBy, 'asc')
    .orderBy('id', 'asc')
    .limit(dealStages.max)
    .execute()) as Row[];
  return rows.map((row) => outputRow(row, meta.fields, meta));
}
