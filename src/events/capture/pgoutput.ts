// A reader of PostgreSQL's logical replication protocol (pgoutput, protocol version 1, with messages): each
// XLogData payload is one message; a transaction is Begin, its changes and messages, Commit. Values come as
// text (each type's output function, in a UTC session) and are read as the pool's driver reads the same text
// (database.ts): numbers as numbers, timestamptz as the API's ISO text, booleans, arrays; so a row image is the row
// a SELECT would give, and the read engine's projection makes the record from it in memory.
// Docs: "Logical Replication Message Formats".
import { isoTimestamp } from '../../infra/db/engine/timestamp-text.ts';
import type { CapturedTransaction, RowImage } from './captured.ts';

/** Microseconds from the Unix epoch to PostgreSQL's (2000-01-01). */
export const PG_EPOCH_US = 946_684_800_000_000;
type Decode = (text: string) => unknown;

const asNumber: Decode = (text) => Number(text);
/** By type oid: what the driver makes of a column's text (anything else stays text). */
const DECODERS: ReadonlyMap<number, Decode> = new Map<number, Decode>([
  [16, (text) => text === 't'],
  [20, asNumber],
  [21, asNumber],
  [23, asNumber],
  [700, asNumber],
  [701, asNumber],
  [1700, asNumber],
  [1184, isoTimestamp],
  [114, (text) => JSON.parse(text)],
  [3802, (text) => JSON.parse(text)],
  [1009, textArray],
  [1015, textArray],
]);

/** `{a,"b c",NULL}` → ['a', 'b c', null] (one dimension: the served tables have no other). */
export function textArray(text: string): (string | null)[] {
  const out: (string | null)[] = [];
  let i = 1;
  const end = text.length - 1;
  while (i < end) {
    let value = '';
    let quoted = false;
    if (text[i] === '"') {
      quoted = true;
      i++;
      while (i < end && text[i] !== '"') {
        if (text[i] === '\\') i++;
        value += text[i];
        i++;
      }
      i++;
    } else {
      while (i < end && text[i] !== ',') value += text[i++];
    }
    out.push(!quoted && value === 'NULL' ? null : value);
    i++; // the comma
  }
  return out;
}

interface Relation {
  table: string;
  columns: { name: string; decode: Decode | undefined }[];
}

/** A 64-bit unsigned big-endian position as a number (exact below 2^53). */
export const readPosition = (buf: Buffer, at: number): number => buf.readUInt32BE(at) * 2 ** 32 + buf.readUInt32BE(at + 4);

/** `16/B374D848` */
export const positionText = (n: number): string =>
  `${Math.floor(n / 2 ** 32)
    .toString(16)
    .toUpperCase()}/${(n % 2 ** 32).toString(16).toUpperCase()}`;

export class PgOutputReader {
  private readonly relations = new Map<number, Relation>();
  private open: CapturedTransaction | undefined;

  /** `skippedOrigin`: the changes of a transaction that says this of itself before them are passed over undecoded
   *  (an import of a million rows is neither decoded nor held in memory; its transaction still ends the usual way). */
  constructor(
    private readonly originPrefix: string,
    private readonly skippedOrigin?: string,
    /** Tables whose inserted rows mark their transaction's origin instead of being changes (Citus: the origin is
     *  a row on the account's node, postgres-capture.ts): each table's row → the origin text. */
    private readonly marks?: ReadonlyMap<string, (row: RowImage) => string>,
    /** Changes held at most: a transaction with more is handed over in parts of this many (captured.ts). */
    private readonly partChanges = Number.POSITIVE_INFINITY,
  ) {}

  /** Reads one message; answers the transaction it completes (at its Commit), or a part of a large one, else
   *  undefined. */
  read(msg: Buffer): CapturedTransaction | undefined {
    switch (msg[0]) {
      case 0x42: // B: final LSN, commit time, xid
        this.open = { images: 'row', position: 0, committedAtUs: Number(msg.readBigInt64BE(9)) + PG_EPOCH_US, origin: null, changes: [] };
        return undefined;
      case 0x43: {
        // C: flags, commit LSN, end LSN, commit time
        const done = this.open;
        this.open = undefined;
        if (!done) return undefined;
        done.position = readPosition(msg, 10);
        return done;
      }
      case 0x52:
        this.readRelation(msg);
        return undefined;
      case 0x49: // I: relation, 'N', new tuple
        this.change(msg, 'insert');
        return this.partWhenFull();
      case 0x55:
        this.change(msg, 'update');
        return this.partWhenFull();
      case 0x44:
        this.change(msg, 'delete');
        return this.partWhenFull();
      case 0x4d: // M: flags, LSN, prefix, length, content
        this.readMessage(msg);
        return undefined;
      default: // Origin, Type, Truncate: nothing an event is made of
        return undefined;
    }
  }

  /** The open transaction's changes so far as a part, once they are `partChanges`; the transaction goes on. */
  private partWhenFull(): CapturedTransaction | undefined {
    const open = this.open;
    if (!open || open.changes.length < this.partChanges) return undefined;
    const part: CapturedTransaction = { ...open, part: true };
    open.changes = [];
    open.parted = true;
    return part;
  }

  private readRelation(msg: Buffer): void {
    const id = msg.readUInt32BE(1);
    let at = 5;
    const [, afterSchema] = cString(msg, at);
    const [table, afterTable] = cString(msg, afterSchema);
    at = afterTable + 1; // replica identity setting
    const count = msg.readUInt16BE(at);
    at += 2;
    const columns: Relation['columns'] = [];
    for (let i = 0; i < count; i++) {
      const [name, next] = cString(msg, at + 1);
      columns.push({ name, decode: DECODERS.get(msg.readUInt32BE(next)) });
      at = next + 8;
    }
    this.relations.set(id, { table, columns });
  }

  private change(msg: Buffer, op: 'insert' | 'update' | 'delete'): void {
    const relation = this.relations.get(msg.readUInt32BE(1));
    if (!relation || !this.open) return;
    if (this.skippedOrigin !== undefined && this.open.origin === this.skippedOrigin) return;
    let at = 5;
    let old: RowImage | null = null;
    let next: RowImage | null = null;
    if (msg[at] === 0x4b || msg[at] === 0x4f) {
      [old, at] = tuple(msg, at + 1, relation, null);
    }
    if (msg[at] === 0x4e) [next, at] = tuple(msg, at + 1, relation, old);
    const mark = this.marks?.get(relation.table);
    if (mark) {
      if (next && this.open.origin === null) this.open.origin = mark(next);
      return;
    }
    this.open.changes.push({ table: relation.table, op, old, new: next });
  }

  private readMessage(msg: Buffer): void {
    if (!this.open || (msg[1] ?? 0) % 2 === 0) return; // only transactional messages belong to a transaction
    const [prefix, at] = cString(msg, 10);
    if (prefix !== this.originPrefix) return;
    const length = msg.readUInt32BE(at);
    this.open.origin = msg.toString('utf8', at + 4, at + 4 + length);
  }
}

function cString(buf: Buffer, at: number): [string, number] {
  const end = buf.indexOf(0, at);
  return [buf.toString('utf8', at, end), end + 1];
}

/** A TupleData: `unchanged` holds an update's old row, whose values stand in for unchanged TOASTed ones. */
function tuple(msg: Buffer, start: number, relation: Relation, unchanged: RowImage | null): [RowImage, number] {
  const count = msg.readUInt16BE(start);
  let at = start + 2;
  const row: RowImage = {};
  for (let i = 0; i < count; i++) {
    const column = relation.columns[i];
    const kind = msg[at];
    at += 1;
    if (kind === 0x74) {
      const length = msg.readUInt32BE(at);
      const text = msg.toString('utf8', at + 4, at + 4 + length);
      at += 4 + length;
      if (column) row[column.name] = column.decode ? column.decode(text) : text;
    } else if (column) {
      row[column.name] = kind === 0x75 ? (unchanged?.[column.name] ?? null) : null;
    }
  }
  return [row, at];
}
