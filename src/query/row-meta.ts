// What the query layer derives once per descriptor from its row schema: field order, kinds and
// nullability, so no request walks a schema.
import type { TObject } from '@sinclair/typebox';
import type { QueryableResource } from './contract.ts';
import { type FieldKind, fieldKind, isNullable } from '../schemas/common.ts';

export interface FieldMeta {
  kind: FieldKind;
  nullable: boolean;
}

export interface RowMeta {
  /** Every response field, `id` first, then in schema order. */
  fields: readonly string[];
  byName: ReadonlyMap<string, FieldMeta>;
}

const cache = new WeakMap<TObject, RowMeta>();

export function rowMeta(row: TObject): RowMeta {
  let meta = cache.get(row);
  if (!meta) {
    const names = Object.keys(row.properties);
    const fields = ['id', ...names.filter((n) => n !== 'id')];
    const byName = new Map<string, FieldMeta>();
    for (const name of fields) {
      const schema = row.properties[name];
      if (schema) byName.set(name, { kind: fieldKind(schema), nullable: isNullable(schema) });
    }
    meta = { fields, byName };
    cache.set(row, meta);
  }
  return meta;
}

export const descriptorMeta = (d: QueryableResource): RowMeta => rowMeta(d.row);
