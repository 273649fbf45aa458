// The rows of the fixed tables (accounts, API keys) as the repositories of accounts/ hand them out, from
// the tables generated from the migrations (tables.ts).
import type { Kysely, Selectable } from 'kysely';
import type { Accounts, ApiKeys, DB } from './tables.ts';

/** A connection (or transaction) used for the fixed tables: the same typed Kysely as every other. */
export type FixedDb = Kysely<DB>;
export type AccountsTable = Accounts;
export type AccountRow = Selectable<Accounts>;
export type KeyRow = Selectable<ApiKeys>;
