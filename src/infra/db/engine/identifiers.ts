// An SQL identifier (a table or a column named at run time) as text, for the statements written as text: COPY, the
// import's staging tables, savepoints, the table maintenance.

/** `name` double-quoted, its own double quotes doubled. */
export const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;
