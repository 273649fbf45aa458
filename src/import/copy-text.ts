// Values in COPY's text format: tab between columns, `\N` for null, backslash escapes.
import type { ColumnSpec } from './column-spec.ts';

const SPECIAL = /[\\\n\r\t]/;
const escapeText = (value: string) =>
  !SPECIAL.test(value)
    ? value
    : value.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));

const arrayLiteral = (items: readonly string[]) => `{${items.map((item) => `"${item.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;

export function copyValue(column: ColumnSpec, value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  switch (column.kind) {
    case 'boolean':
      return value ? 't' : 'f';
    case 'number':
    case 'integer':
      return String(value);
    case 'text_array':
      return escapeText(arrayLiteral(value as string[]));
    case 'json':
      return escapeText(JSON.stringify(value));
    default:
      return escapeText(String(value));
  }
}

/** One row as a COPY line (with its newline). */
export function copyLine(columns: readonly ColumnSpec[], values: readonly unknown[]): string {
  let line = '';
  for (let i = 0; i < columns.length; i++) line += (i === 0 ? '' : '\t') + copyValue(columns[i] as ColumnSpec, values[i]);
  return `${line}\n`;
}
