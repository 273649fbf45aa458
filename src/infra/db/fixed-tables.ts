// The fixed tables (accounts, API keys, idempotency records, tenant counters) as Kysely sees them,
// so their queries are typed end to end. Account-owned resource tables stay dynamic (`Db`): the
// descriptor engine reads them by name, and `any` stays inside it.
import type { ColumnType, Generated, Kysely, Selectable } from 'kysely';
import type { KeyMode } from '../../domain/api-keys.ts';
import type { ModuleName } from '../../domain/modules.ts';
import type { PlanCode } from '../../domain/plans.ts';

/** A timestamptz column: read as its ISO 8601 string (timestamp-text.ts), written as a Date or a string. */
type Timestamp = ColumnType<string, Date | string, Date | string>;
type TimestampOrNull = ColumnType<string | null, Date | string | null, Date | string | null>;
type GeneratedTimestamp = ColumnType<string, Date | string | undefined, Date | string>;

/** A text[] column with a database default. */
type TextArray<T extends string = string> = ColumnType<T[], T[] | undefined, T[]>;

export interface AccountsTable {
  id: Generated<string>;
  name: string;
  plan_code: PlanCode;
  modules: TextArray<ModuleName>;
  api_enabled: Generated<boolean>;
  read_only: Generated<boolean>;
  burst_per_second: number | null;
  requests_per_minute_read: number | null;
  requests_per_minute_write: number | null;
  requests_per_day_total: number | null;
  is_demo: Generated<boolean>;
  created_at: GeneratedTimestamp;
  updated_at: TimestampOrNull;
}

export interface ApiKeysTable {
  id: Generated<string>;
  account_id: string;
  name: string;
  mode: KeyMode;
  secret_hash: string;
  last4: string;
  scopes: TextArray;
  allowed_ips: TextArray;
  expires_at: TimestampOrNull;
  revoked_at: TimestampOrNull;
  created_at: GeneratedTimestamp;
}

export interface IdempotencyKeysTable {
  api_key_id: string;
  idempotency_key: string;
  signature: string;
  state: 'in_progress' | 'done';
  response_status: number | null;
  response_body: string | null;
  response_content_type: string | null;
  claim_token: string | null;
  committed: Generated<boolean>;
  created_at: GeneratedTimestamp;
  expires_at: Timestamp;
}

export interface TenantCountersTable {
  team_id: string;
  mode: KeyMode;
  name: string;
  value: number;
}

export interface FixedTables {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  idempotency_keys: IdempotencyKeysTable;
  tenant_counters: TenantCountersTable;
}

/** A connection (or transaction) used for the fixed tables only. */
export type FixedDb = Kysely<FixedTables>;

export type AccountRow = Selectable<AccountsTable>;
export type KeyRow = Selectable<ApiKeysTable>;
