// Deals and their funnel stages (SPEC 2.5): deals restrict their filter operators.
import { Type } from '@sinclair/typebox';
import { F } from '../schemas/common.ts';
import { filtersFor, type ResourceDescriptor } from './descriptor.ts';

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
  module: 'crm_funil',
  row: dealRow,
  filters: filtersFor(dealRow, ['status', 'stage_id', 'customer_id'], { status: ['eq', 'in'], stage_id: ['eq'], customer_id: ['eq'] }),
  sorts: ['created_at', 'updated_at', 'entered_stage_at', 'closed_at'],
};

/** `GET /v1/deals/stages`: the whole funnel in one item envelope, by position. */
export const dealStages = { table: 'deal_stages', row: dealStageRow, orderBy: 'position', max: 100 } as const;
