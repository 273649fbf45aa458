// The tables whose committed changes become events: each resource's table, and the tables of its children (a
// sale's items and status history), whose changes are changes of their parent record. Derived from the
// descriptors, so a resource added to the registry is captured with nothing else to do.
import type { ResourceDescriptor } from '../../resources/descriptor.ts';
import { RESOURCES } from '../../resources/registry.ts';

export interface ServedTable {
  table: string;
  descriptor: ResourceDescriptor;
  /** On a child table: the column naming the parent record (`transaction_id`). */
  parentKey?: string;
}

export function servedTables(resources: readonly ResourceDescriptor[] = RESOURCES): ReadonlyMap<string, ServedTable> {
  const out = new Map<string, ServedTable>();
  for (const descriptor of resources) {
    out.set(descriptor.table, { table: descriptor.table, descriptor });
    for (const child of Object.values(descriptor.import?.children ?? {}))
      out.set(child.table, { table: child.table, descriptor, parentKey: child.parentKey });
  }
  return out;
}

export const SERVED_TABLES = servedTables();
