// Number and string helpers for the text of schemas and of the OpenAPI document that never reach for ICU:
// the first toLocaleString or localeCompare maps Node's locale and collation data, about 9 MB of a served
// process's resident memory (docs/performance.md) and a quarter of a second at start-up.

/** `n` with a comma every three digits (`10,000`), as `toLocaleString('en-US')` writes an integer. */
export const thousands = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** Orders strings by UTF-16 code units: the same order as `localeCompare` for the ASCII keys it sorts (status codes). */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
