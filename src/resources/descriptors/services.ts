// Services (SPEC 2.10): schedulable services, row schema, filters and sorts of /v1/services.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const serviceRow = Type.Object(
  {
    id: F.uuid(),
    name: F.text(),
    description: F.textOrNull(),
    category_id: F.uuidOrNull(),
    duration_minutes: F.integer(),
    price: F.numberOrNull({ description: 'In reais' }),
    requires_staff: F.booleanOrNull(),
    color: F.textOrNull({ examples: ['#3366ff'] }),
    is_active: F.booleanOrNull(),
    created_at: F.timestampOrNull(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Service' },
);

export const services: ResourceDescriptor = {
  name: 'services',
  table: 'services',
  module: 'agendamentos',
  row: serviceRow,
  filters: filtersFor(serviceRow, ['name', 'is_active', 'category_id']),
  sorts: ['created_at', 'updated_at', 'name'],
};
