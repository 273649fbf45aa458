// What a capture source hands on: committed transactions, each with its row changes of the served tables and
// the origin its writer marked it with, in commit order.

/** A row as a source gives it, column by column: as the driver reads a SELECT of it (`row`, PostgreSQL's WAL), or
 *  as to_jsonb writes it (`json`, the embedded database's change log), which json_populate_record reads back. */
export type RowImage = Record<string, unknown>;
export type ImageKind = 'row' | 'json';

export interface RowChange {
  table: string;
  op: 'insert' | 'update' | 'delete';
  old: RowImage | null;
  new: RowImage | null;
}

export interface CapturedTransaction {
  images: ImageKind;
  /** Where the source stands once this transaction is captured (a WAL position, or the change log's seq). */
  position: number;
  /** When it committed, in microseconds since the Unix epoch. */
  committedAtUs: number;
  /** The text its writer marked it with (balcao_mark_origin), or null: a writer other than Balcão. */
  origin: string | null;
  changes: RowChange[];
  /** A transaction too large to hold whole is handed over in parts as it is read (PostgreSQL sends it after its
   *  commit, in one piece): a part before its Commit has `part` set (its position is not known yet, its origin may
   *  be), and the last one, read at the Commit, has `parted` set. */
  part?: true;
  parted?: true;
}
