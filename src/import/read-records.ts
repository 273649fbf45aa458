// Turns an import source into a stream of records, each tagged with its resource and where it
// sits in the file (`file:line` or `resource[index]`), one record in memory at a time.
import parser from 'stream-json/parser.js';
import Assembler from 'stream-json/assembler.js';
import type { ColumnSpec, TableSpec } from './column-spec.ts';
import { CsvSyntaxError, csvRecords } from './csv-records.ts';
import { ImportError } from './import-error.ts';
import { type ImportSource, openText } from './sources.ts';

export interface SourceRecord {
  /** Resource name as the file gives it (checked by the caller). */
  resource: string;
  record: unknown;
  /** Where the record is: `file:line` (NDJSON, CSV) or `file` (JSON object, whose path carries the index). */
  at: string;
  /** Path of the record in error messages: `customers[3]` in a JSON object, else the resource name. */
  path: string;
  /** Cells that could not be read as their column's type (CSV). */
  problems?: { field: string; message: string }[];
  /** JSON object: `start` opens a resource's array (counted even when empty); `not-array` is a resource whose value is not one. */
  event?: 'start' | 'not-array';
}

/** Resource → table spec, to read CSV cells as the column's type. */
export type SpecOf = (resource: string) => TableSpec | undefined;

export function readRecords(source: ImportSource, specOf: SpecOf, onBytes?: (n: number) => void): AsyncIterable<SourceRecord> {
  const text = openText(source, onBytes);
  switch (source.format) {
    case 'json':
      return readJsonObject(source, text);
    case 'ndjson':
      return readNdjson(source, text);
    case 'csv':
      return readCsv(source, text, specOf);
  }
}

/** DECISIONS C: `{"customers": [...], "sales": [...]}`, parsed token by token; one record assembled at a time. */
async function* readJsonObject(source: ImportSource, text: AsyncIterable<string>): AsyncGenerator<SourceRecord> {
  const tokens = parser.asStream({ packValues: true, streamValues: false });
  const feed = (async () => {
    try {
      for await (const chunk of text) if (!tokens.write(chunk)) await new Promise((r) => tokens.once('drain', r));
      tokens.end();
    } catch (err) {
      tokens.destroy(err as Error);
    }
  })();
  let depth = 0;
  let key: string | undefined;
  let index = 0;
  /** 'array': inside a resource's array; 'skip': the value of a key that is not an array. */
  let inside: 'array' | 'skip' | undefined;
  let record: Assembler | undefined;
  try {
    for await (const token of tokens as AsyncIterable<{ name: string; value?: string }>) {
      if (record) {
        record.consume(token as never);
        if (record.done) {
          if (inside === 'array') yield { resource: key as string, record: record.current, at: source.file, path: `${key}[${index++}]` };
          else yield { resource: key as string, record: record.current, at: source.file, path: key as string, event: 'not-array' };
          record = undefined;
          if (inside === 'skip') inside = undefined;
        }
        continue;
      }
      if (depth === 0) {
        if (token.name !== 'startObject')
          throw ImportError.plain(`${source.file}: the file must hold a JSON object whose keys are resource names`);
        depth = 1;
      } else if (inside === 'array') {
        if (token.name === 'endArray') inside = undefined;
        else {
          record = new Assembler();
          record.consume(token as never);
          if (record.done) {
            yield { resource: key as string, record: record.current, at: source.file, path: `${key}[${index++}]` };
            record = undefined;
          }
        }
      } else if (token.name === 'keyValue') {
        key = token.value as string;
        index = 0;
      } else if (token.name === 'startArray') {
        inside = 'array';
        yield { resource: key as string, record: undefined, at: source.file, path: key as string, event: 'start' };
      } else if (token.name === 'endObject') {
        depth = 0;
      } else {
        // The value of `key` is not an array: assembled (to skip it) and handed over, so the caller names it.
        inside = 'skip';
        record = new Assembler();
        record.consume(token as never);
        if (record.done) {
          yield { resource: key as string, record: record.current, at: source.file, path: key as string, event: 'not-array' };
          record = undefined;
          inside = undefined;
        }
      }
    }
  } catch (err) {
    if (err instanceof ImportError) throw err;
    throw ImportError.plain(`${source.file} is not valid JSON (${(err as Error).message.split('\n')[0]})`);
  } finally {
    tokens.destroy();
    await feed;
  }
}

/** One JSON record per line; blank lines are skipped. A line's `resource` field names its resource when the file's name does not. */
async function* readNdjson(source: ImportSource, text: AsyncIterable<string>): AsyncGenerator<SourceRecord> {
  let rest = '';
  let line = 0;
  const parseLine = (content: string): SourceRecord | undefined => {
    line++;
    if (content.trim() === '') return undefined;
    const at = `${source.file}:${line}`;
    let record: unknown;
    try {
      record = JSON.parse(content);
    } catch (err) {
      throw ImportError.plain(`${at}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
    }
    let resource = source.resource;
    if (typeof record === 'object' && record !== null && !Array.isArray(record) && 'resource' in record) {
      const { resource: named, ...rest } = record as Record<string, unknown>;
      if (typeof named !== 'string') throw ImportError.plain(`${at}: "resource" must be a resource name`);
      if (source.resource && named !== source.resource) throw ImportError.plain(`${at}: a ${named} record in ${source.resource} file`);
      resource = named;
      record = rest;
    }
    if (!resource) throw ImportError.plain(`${at}: the record says no "resource" (and the file name names none)`);
    return { resource, record, at, path: resource };
  };
  for await (const chunk of text) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() as string;
    for (const content of lines) {
      const record = parseLine(content.endsWith('\r') ? content.slice(0, -1) : content);
      if (record) yield record;
    }
  }
  const record = parseLine(rest);
  if (record) yield record;
}

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
const INTEGER = /^-?\d+$/;

/** RFC 4180 with a header row of field names. An empty cell is null; a quoted empty cell ("") is an empty string. */
async function* readCsv(source: ImportSource, text: AsyncIterable<string>, specOf: SpecOf): AsyncGenerator<SourceRecord> {
  const resource = source.resource as string;
  const spec = specOf(resource);
  let header: string[] | undefined;
  let columns: (ColumnSpec | undefined)[] = [];
  try {
    for await (const { cells, line, quotedEmpty } of csvRecords(text)) {
      const at = `${source.file}:${line}`;
      if (!header) {
        header = cells.map((name) => name.trim());
        columns = header.map((field) => (field === 'sale_id' ? undefined : spec?.get(field)));
        continue;
      }
      if (cells.length !== header.length) {
        throw ImportError.plain(`${at}: ${cells.length} cells where the header has ${header.length}`);
      }
      const problems: { field: string; message: string }[] = [];
      const typed: Record<string, unknown> = {};
      for (let index = 0; index < header.length; index++) {
        const field = header[index] as string;
        const cell = cells[index] as string;
        const column = columns[index];
        if (cell === '') typed[field] = quotedEmpty?.has(index) ? '' : null;
        else typed[field] = column ? readCell(column.kind, cell, field, problems) : cell;
      }
      yield { resource, record: typed, at, path: resource, problems };
    }
  } catch (err) {
    if (err instanceof CsvSyntaxError) throw ImportError.plain(`${source.file}: not valid CSV (${err.message})`);
    throw err;
  }
}

/** A cell as its column's type; a cell that is not one is kept as text, and the column check names it. */
function readCell(kind: string, cell: string, field: string, problems: { field: string; message: string }[]): unknown {
  switch (kind) {
    case 'number':
      return NUMBER.test(cell.trim()) ? Number(cell) : cell;
    case 'integer':
      return INTEGER.test(cell.trim()) ? Number(cell) : cell;
    case 'boolean':
      return cell === 'true' ? true : cell === 'false' ? false : cell;
    case 'text_array':
    case 'json':
      try {
        return JSON.parse(cell);
      } catch {
        problems.push({ field, message: 'must be JSON in a CSV cell' });
        return null;
      }
    default:
      return cell;
  }
}
