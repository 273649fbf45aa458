/** A row of a table whose columns the code does not type (the descriptor-driven engines, the import). */
export type Row = Record<string, unknown>;
