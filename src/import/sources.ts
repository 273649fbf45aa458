// Finds what `balcao import` reads: a file or every recognised file of a directory, its format
// (JSON object, NDJSON, CSV, each optionally gzipped) and resource, opened as a stream of UTF-8
// text that refuses invalid bytes, so a file is never held whole in memory.
import { createReadStream, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ImportError } from './import-error.ts';
import { IMPORT_RESOURCE_NAMES } from './resources.ts';

export type SourceFormat = 'json' | 'ndjson' | 'csv';

/** Resources a file may hold: the API's, plus sale items and status history as their own files (keyed by `sale_id`). */
export const CHILD_RESOURCE_NAMES = ['sale_items', 'sale_status_history'] as const;
export const STREAM_RESOURCE_NAMES: readonly string[] = [...IMPORT_RESOURCE_NAMES, ...CHILD_RESOURCE_NAMES];

export interface ImportSource {
  /** The path as the operator wrote it (named in errors). */
  file: string;
  format: SourceFormat;
  gzip: boolean;
  /** The resource the file name says (`customers.csv`); undefined for a JSON object or a mixed NDJSON file. */
  resource?: string;
  /** Bytes on disk (0 for a pipe): the progress bar's total. */
  size: number;
}

const NAME = /^(.*?)\.(json|ndjson|jsonl|csv)(\.gz)?$/i;

/** What `target` names: one file, or the recognised files of a directory in resource order (parents before children). */
export async function findSources(target: string): Promise<ImportSource[]> {
  let info: Stats;
  try {
    info = await stat(target);
  } catch (err) {
    throw ImportError.plain(`cannot read ${target}: ${describeIoError(err)}`);
  }
  if (!info.isDirectory()) {
    const source = sourceOf(target, info);
    if (!source) throw ImportError.plain(`cannot tell the format of ${target} (expected .json, .ndjson, .jsonl or .csv, optionally .gz)`);
    if (source.format === 'csv' && !source.resource) {
      throw ImportError.plain(`${target}: a CSV file is named after its resource (${STREAM_RESOURCE_NAMES.join(', ')})`);
    }
    return [source];
  }
  const sources: ImportSource[] = [];
  for (const name of (await readdir(target)).sort()) {
    const file = path.join(target, name);
    const entry = await stat(file);
    if (!entry.isFile()) continue;
    const source = sourceOf(file, entry);
    if (source?.resource || source?.format === 'ndjson') sources.push(source);
  }
  if (sources.length === 0)
    throw ImportError.plain(`${target} holds no file balcao import recognises (such as customers.csv or sales.ndjson)`);
  const rank = (s: ImportSource) => (s.resource ? STREAM_RESOURCE_NAMES.indexOf(s.resource) : -1);
  return sources.sort((a, b) => rank(a) - rank(b));
}

function sourceOf(file: string, info: Stats): ImportSource | undefined {
  const match = NAME.exec(path.basename(file));
  if (!match) return undefined;
  const extension = (match[2] as string).toLowerCase();
  const format: SourceFormat = extension === 'csv' ? 'csv' : extension === 'json' ? 'json' : 'ndjson';
  const base = (match[1] as string).toLowerCase();
  const resource = format !== 'json' && STREAM_RESOURCE_NAMES.includes(base) ? base : undefined;
  return { file, format, gzip: match[3] !== undefined, resource, size: info.isFile() ? info.size : 0 };
}

export function describeIoError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR') return `not a complete gzip file (${(err as Error).message})`;
  return (err as Error).message ?? String(err);
}

/**
 * The file as text chunks: gunzipped when named .gz, decoded as UTF-8 with or without a BOM,
 * refusing bytes that are not UTF-8 (a Latin-1 file is named, never imported garbled).
 * `onBytes` reports bytes read from disk, for the progress bar.
 */
export function openText(source: ImportSource, onBytes: (n: number) => void = () => {}): AsyncIterable<string> {
  const raw = createReadStream(source.file, { highWaterMark: 1 << 18 });
  raw.on('data', (chunk) => onBytes(chunk.length));
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  // Where the text is, so a refusal names the line and the true offset of the bad byte: bytes and
  // newlines before this chunk, and the bytes of a character the previous chunk ended inside.
  let offset = 0;
  let newlines = 0;
  let carry: Buffer = Buffer.alloc(0);
  const decode = new Transform({
    readableObjectMode: true,
    transform(chunk: Buffer, _encoding, done) {
      try {
        const text = decoder.decode(chunk, { stream: true });
        newlines += countNewlines(chunk, 0, chunk.length);
        offset += chunk.length;
        carry = unfinishedTail(Buffer.concat([carry, chunk.subarray(Math.max(0, chunk.length - 3))]));
        done(null, text === '' ? undefined : text);
      } catch {
        const bytes = Buffer.concat([carry, chunk]);
        const index = firstInvalidByte(bytes);
        const line = newlines + countNewlines(chunk, 0, Math.max(0, index - carry.length)) + 1;
        const where = `byte ${(offset - carry.length + index).toLocaleString('en')}${source.gzip ? ' of the uncompressed text' : ''}`;
        const bad = (bytes[index] ?? 0).toString(16).padStart(2, '0');
        done(ImportError.plain(`${source.file}:${line} is not UTF-8 text (invalid byte 0x${bad} at ${where})`));
      }
    },
    flush(done) {
      try {
        const text = decoder.decode();
        done(null, text === '' ? undefined : text);
      } catch {
        done(ImportError.plain(`${source.file} is not UTF-8 text (it ends inside a character)`));
      }
    },
  });
  const fail = (err: unknown) =>
    decode.destroy(err instanceof ImportError ? err : ImportError.plain(`cannot read ${source.file}: ${describeIoError(err)}`));
  raw.on('error', fail);
  if (source.gzip) {
    const gunzip = createGunzip();
    gunzip.on('error', fail);
    raw.pipe(gunzip).pipe(decode);
  } else {
    raw.pipe(decode);
  }
  return decode;
}

function countNewlines(bytes: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = bytes.indexOf(10, from); i !== -1 && i < to; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

/** Length of a UTF-8 sequence its lead byte announces; 0 for a byte no sequence starts with. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** The bytes at the end of `bytes` that begin a character not finished yet (at most 3). */
function unfinishedTail(bytes: Buffer): Buffer {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    return sequenceLength(byte) > back ? bytes.subarray(bytes.length - back) : Buffer.alloc(0);
  }
  return Buffer.alloc(0);
}

/** Index of the first byte of `bytes` that starts no well-formed UTF-8 character (bytes.length when the end is cut off). */
export function firstInvalidByte(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] as number;
    const length = sequenceLength(lead);
    if (length === 0) return i;
    if (length === 1) {
      i++;
      continue;
    }
    // The second byte's range excludes overlong forms, surrogates and code points past U+10FFFF.
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k < length; k++) {
      const byte = bytes[i + k];
      if (byte === undefined) return bytes.length;
      if (k === 1 ? byte < low || byte > high : (byte & 0xc0) !== 0x80) return i;
    }
    i += length;
  }
  return bytes.length;
}
