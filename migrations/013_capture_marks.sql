-- The origin mark of an import or a data subject's erasure as a row of the account's own (docs/events.md): capture
-- reads it beside the transaction's changes. On PostgreSQL the logical message of balcao_mark_origin() is enough,
-- but on Citus an account's changes are decoded from its worker's WAL, which the coordinator's message never
-- reaches; a row of this table, distributed with the account's other rows, is written there. A write through the
-- API needs none: its write-log entry (request_log) is on that worker already. One row per import or erasure.
CREATE TABLE capture_marks (
  team_id uuid NOT NULL REFERENCES accounts (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  origin text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
