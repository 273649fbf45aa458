-- The write log (GET /v1/requests, issue 28): one row per committed write of a key (each operation
-- of a batch included), inserted in the write's own transaction so the write and its entry commit
-- or vanish together. Entries older than 24 hours are purged (docs/api-guide.md "Write log").
-- team_id leads the primary key and every index, as every account-owned table's (scale-out).
CREATE TABLE request_log (
  team_id uuid NOT NULL REFERENCES accounts (id),
  id uuid NOT NULL,
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  api_key_id uuid NOT NULL,
  request_id text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  status integer NOT NULL,
  idempotency_key text,
  resource text NOT NULL,
  resource_id uuid,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (team_id, id)
);
CREATE INDEX request_log_keyset ON request_log (team_id, mode, api_key_id, created_at, id);
CREATE INDEX request_log_retention ON request_log (created_at);
