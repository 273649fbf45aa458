// `balcao export`: writes every record of an account, page by page, in a format `balcao import`
// reads back: NDJSON (a directory of `<resource>.ndjson`, or one file whose lines carry
// "resource"), CSV (a directory of `<resource>.csv`) or the JSON object of the import (one file,
// sale items and history nested). Memory stays at one page whatever the account's size.
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import type { KeyMode } from '../domain/api-keys.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { DataTransferError } from '../import/import-error.ts';
import type { ImportResourceName } from '../import/resources.ts';
import { AccountReader, type ExportRecord, type ExportSection } from './read-account.ts';

export const EXPORT_FORMATS = ['ndjson', 'csv', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportOptions {
  accountId: string;
  mode: KeyMode;
  format: ExportFormat;
  /** A directory (ndjson, csv) or a file (json; ndjson when it ends in .ndjson or .jsonl). */
  out: string;
  includeInternal?: boolean;
  onProgress?: (progress: { rows: number; total: number }) => void;
}

export interface ExportResult {
  account_id: string;
  mode: KeyMode;
  format: ExportFormat;
  /** Files written. */
  files: string[];
  /** Records per resource, and per sale child (`sales.items`), as `balcao import` prints them. */
  counts: Partial<Record<ImportResourceName, number>>;
  nested: Record<string, number>;
}

/** The API's nested name of a sale child section (`sale_items` → `sales.items`). */
const nestedName = (section: string) => `sales.${section.replace(/^sale_/, '')}`;

export async function exportAccount(db: Db, options: ExportOptions): Promise<ExportResult> {
  const { accountId, mode, format, out } = options;
  const account = await db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst();
  if (!account) throw DataTransferError.plain(`account ${accountId} not found`);
  const singleFile = format === 'json' || (format === 'ndjson' && /\.(ndjson|jsonl)$/i.test(out));
  await prepareOut(out, singleFile, format);

  // One snapshot: records written while the export runs are all in it or all out.
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      const reader = await AccountReader.open(tx, accountId, mode, !!options.includeInternal);
      const sections = reader.sections();
      let total = 0;
      for (const section of sections) total += await reader.count(section.table);
      const tally = new ExportTally({ account_id: accountId, mode, format, files: [], counts: {}, nested: {} }, total, options.onProgress);
      if (format === 'json') for (const section of sections.filter((s) => s.parentKey)) tally.result.nested[nestedName(section.name)] = 0;
      const main = format === 'json' ? sections.filter((s) => !s.parentKey) : sections;
      if (singleFile) await writeOneFile(reader, main, format, out, tally);
      else await writeFilePerSection(reader, main, format, out, tally);
      return tally.result;
    });
}

/** What an export has written so far: its result's counts, and its progress. */
class ExportTally {
  private rows = 0;
  constructor(
    readonly result: ExportResult,
    private readonly total: number,
    private readonly onProgress: ExportOptions['onProgress'],
  ) {}

  /** A section whose file (or part of one) is started: it counts even when empty. */
  start(section: ExportSection): void {
    this.count(section, 0);
  }

  /** `n` more records of `section` written. */
  add(section: ExportSection, n: number): void {
    this.count(section, n);
    this.rows += n;
    this.onProgress?.({ rows: this.rows, total: this.total });
  }

  private count(section: ExportSection, n: number): void {
    const { counts, nested } = this.result;
    if (section.parentKey) nested[nestedName(section.name)] = (nested[nestedName(section.name)] ?? 0) + n;
    else counts[section.name as ImportResourceName] = (counts[section.name as ImportResourceName] ?? 0) + n;
  }
}

/** One file: the JSON object of the import (sales with their children nested), or NDJSON lines naming their resource. */
async function writeOneFile(reader: AccountReader, sections: ExportSection[], format: ExportFormat, out: string, tally: ExportTally) {
  const file = await openOut(out);
  tally.result.files.push(out);
  if (format === 'json') await write(file, '{');
  for (const [i, section] of sections.entries()) {
    tally.start(section);
    if (format === 'json') await write(file, `${i === 0 ? '' : ','}\n${JSON.stringify(section.name)}: [`);
    let first = true;
    for await (const page of reader.pages(section)) {
      if (format === 'json' && section.name === 'sales') await nestChildren(reader, page, tally.result);
      let text = '';
      for (const record of page) {
        if (format === 'json') text += `${first ? '' : ','}\n${JSON.stringify(record)}`;
        else text += `${JSON.stringify({ resource: section.name, ...record })}\n`;
        first = false;
      }
      await write(file, text);
      tally.add(section, page.length);
    }
    if (format === 'json') await write(file, first ? ']' : '\n]');
  }
  if (format === 'json') await write(file, '\n}\n');
  await close(file);
}

/** A directory of `<resource>.<format>` files. */
async function writeFilePerSection(
  reader: AccountReader,
  sections: ExportSection[],
  format: ExportFormat,
  out: string,
  tally: ExportTally,
) {
  for (const section of sections) {
    const name = path.join(out, `${section.name}.${format}`);
    const file = await openOut(name);
    tally.result.files.push(name);
    tally.start(section);
    if (format === 'csv') await write(file, stringify([section.fields]));
    for await (const page of reader.pages(section)) {
      await write(file, format === 'csv' ? csvRows(section, page) : page.map((r) => `${JSON.stringify(r)}\n`).join(''));
      tally.add(section, page.length);
    }
    await close(file);
  }
}

/** JSON format: each sale carries its items and status history, as DECISIONS C describes. */
async function nestChildren(reader: AccountReader, sales: ExportRecord[], result: ExportResult): Promise<void> {
  const ids = sales.map((s) => String(s.id));
  for (const { field, table, parentKey } of reader.nestedOf('sales')) {
    const groups = await reader.childrenOf(table, parentKey, ids);
    for (const sale of sales) {
      const children = groups.get(String(sale.id)) ?? [];
      sale[field] = children;
      result.nested[`sales.${field}`] = (result.nested[`sales.${field}`] ?? 0) + children.length;
    }
  }
}

/** CSV cells: null is an empty cell, an empty string a quoted one (""), arrays and objects JSON. */
function csvRows(section: ExportSection, page: readonly ExportRecord[]): string {
  const cell = (value: unknown): string | null => {
    if (value === null || value === undefined) return null;
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
  };
  return stringify(
    page.map((record) => section.fields.map((field) => cell(record[field]))),
    { quoted_match: /^$/ },
  );
}

async function prepareOut(out: string, singleFile: boolean, format: ExportFormat): Promise<void> {
  if (singleFile) {
    await mkdir(path.dirname(path.resolve(out)), { recursive: true });
    return;
  }
  const existing = await stat(out).catch(() => undefined);
  if (existing && !existing.isDirectory())
    throw DataTransferError.plain(`${out} is a file: --format ${format} writes a directory of files`);
  await mkdir(out, { recursive: true });
}

async function openOut(file: string): Promise<WriteStream> {
  const stream = createWriteStream(file);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (err) => reject(DataTransferError.plain(`cannot write ${file}: ${err.message}`)));
  });
  return stream;
}

async function write(stream: WriteStream, text: string): Promise<void> {
  if (text !== '' && !stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
}

async function close(stream: WriteStream): Promise<void> {
  await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
}
