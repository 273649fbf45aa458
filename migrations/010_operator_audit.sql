-- The operator audit log (issue 50): one row per `balcao` command that changed an account, a key, or a customer's
-- personal data (an erasure), written in the command's own transaction. It names who ran the command (`actor`:
-- --actor, BALCAO_ACTOR or the OS user), the command, its target and what changed, never a secret or a key.
-- Append-only: Balcão has no command that changes or deletes an entry, and the triggers below refuse UPDATE,
-- DELETE and TRUNCATE from anyone (dropping the table or the triggers takes the table's owner, on purpose).
-- Not account-owned data (it has `account_id`, not `team_id`): on Citus it stays a coordinator-local table, where
-- triggers are allowed (migrations/citus/distribute.sql distributes only tables with team_id).
-- A new table: safe while the release before it serves (docs/operations.md, "expand, then contract").
CREATE TABLE operator_audit (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  at timestamptz NOT NULL DEFAULT now(),
  actor text NOT NULL,
  command text NOT NULL,
  account_id uuid,
  target_type text NOT NULL,
  target_id text,
  changes jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX operator_audit_at ON operator_audit (at, id);
CREATE INDEX operator_audit_account ON operator_audit (account_id, at, id);

-- The body's statement ends inside its line: the migration runner splits a file at semicolons that end a line.
CREATE FUNCTION operator_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the operator audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege'; END
$$;
CREATE TRIGGER operator_audit_no_change BEFORE UPDATE OR DELETE ON operator_audit
  FOR EACH ROW EXECUTE FUNCTION operator_audit_append_only();
CREATE TRIGGER operator_audit_no_truncate BEFORE TRUNCATE ON operator_audit
  FOR EACH STATEMENT EXECUTE FUNCTION operator_audit_append_only();
