// What a capture source hands on: committed transactions, each with its row changes of the served tables and
// the origin its writer marked it with, in commit order.

/** A row as a source gives it: column → a value json_populate_record reads into the column's type. */
export type RowImage = Record<string, unknown>;

export interface RowChange {
  table: string;
  op: 'insert' | 'update' | 'delete';
  old: RowImage | null;
  new: RowImage | null;
}

export interface CapturedTransaction {
  /** Where the source stands once this transaction is captured (a WAL position, or the change log's seq). */
  position: number;
  /** When it committed, in microseconds since the Unix epoch. */
  committedAtUs: number;
  /** The text its writer marked it with (balcao_mark_origin), or null: a writer other than Balcão. */
  origin: string | null;
  changes: RowChange[];
}
