// Appointments (SPEC 2.6): row schema, filters and sorts of /v1/appointments.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const appointmentRow = Type.Object(
  {
    id: F.uuid(),
    customer_id: F.uuid(),
    appointment_date: F.date(),
    start_time: F.time(),
    end_time: F.time(),
    status: F.text({ examples: ['scheduled'] }),
    appointment_type: F.textOrNull(),
    notes: F.textOrNull(),
    customer_notes: F.textOrNull(),
    cancellation_reason: F.textOrNull(),
    has_passed: F.booleanOrNull(),
    transaction_id: F.uuidOrNull(),
    pet_id: F.uuidOrNull(),
    is_active: F.booleanOrNull(),
    created_at: F.timestampOrNull(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Appointment' },
);

export const appointments: ResourceDescriptor = {
  name: 'appointments',
  table: 'appointments',
  module: 'agendamentos',
  row: appointmentRow,
  filters: filtersFor(appointmentRow, ['appointment_date', 'status', 'customer_id', 'is_active']),
  sorts: ['created_at', 'updated_at', 'appointment_date'],
};
