// The columns a change sets, as the statements built once per shape bind them (write-engine.ts `changeStatement`,
// change-statement.ts): the shape names the columns, and which JSON columns carry a value; the values are bound in
// column order, JSON as text, and cast back where the statement is built.
import { sql } from 'kysely';
import { fieldKind } from '../../schemas/common.ts';
import type { ResourceDescriptor, Row } from '../descriptor.ts';
import { isSqlFragment } from './insert-statement.ts';

export interface ChangedColumns {
  readonly columns: readonly string[];
  /** Per column, whether it is a JSON value bound as text. */
  readonly json: readonly boolean[];
  /** The values to bind, in column order. */
  readonly bound: readonly unknown[];
  /** What tells the statement's text apart: null when a value is a SQL fragment (a soft delete's `now()`), which
   *  is part of the text, so the statement is built each time. */
  readonly shape: string | null;
}

/**
 * The change's columns, or undefined when one is a string array: its statement text depends on the value
 * (`ARRAY[...]`), so it has no shape to build once.
 */
export function changedColumns(d: ResourceDescriptor, values: Row): ChangedColumns | undefined {
  const columns: string[] = [];
  const json: boolean[] = [];
  const bound: unknown[] = [];
  let shape: string | null = '';
  for (const column in values) {
    const value = values[column];
    if (value === undefined) continue;
    const schema = d.row.properties[column];
    const kind = schema ? fieldKind(schema) : undefined;
    if (kind === 'text_array' && value !== null) return undefined;
    const fragment = isSqlFragment(value);
    const isJson = value !== null && !fragment && kind === 'json';
    columns.push(column);
    json.push(isJson);
    bound.push(isJson ? JSON.stringify(value) : value);
    if (fragment) shape = null;
    else if (shape !== null) shape += isJson ? `|${column}:json` : `|${column}`;
  }
  return { columns, json, bound, shape };
}

/** The SET of a statement built from bound values: `bound[at + i]` is column i's value, JSON cast back from text. */
export function setOfChanged(changed: ChangedColumns, bound: readonly unknown[], at: number): Row {
  const set: Row = {};
  changed.columns.forEach((column, i) => {
    const value = bound[at + i];
    set[column] = changed.json[i] ? sql`cast(cast(${value} as text) as jsonb)` : value;
  });
  return set;
}
