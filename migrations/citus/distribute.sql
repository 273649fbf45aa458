-- Distributes a migrated Balcão database over a Citus cluster by account (issue 27, docs/scale-out.md).
-- Run it on the coordinator after `balcao migrate`, in the application's database, once the citus
-- extension is created there and the workers are added (citus_set_coordinator_host, citus_add_node):
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f migrations/citus/distribute.sql
-- It is idempotent: run it again after every `balcao migrate`, and the account-owned tables a new
-- migration created are distributed too (a new table is a coordinator-local table until then).
-- - accounts and api_keys become reference tables (copied to every node): each account-owned row
--   refers to its account, and authentication reads a key with its account;
-- - every table with a team_id column is distributed by team_id, all co-located with customers, so a
--   tenant's rows of every table, and the joins and foreign keys between them, are on one node;
-- - idempotency_keys stays on the coordinator (Citus makes it a "Citus local table" because of its
--   foreign key to the reference table api_keys), schema_migrations too.
-- Foreign keys between account-owned tables are dropped and re-added around the distribution: Citus
-- distributes no table referenced by a local one, nor one referring to a local one, so no order works
-- with them in place.
-- Citus says NOTICE for every table it turns into a Citus local table on the way: not news here.
SET client_min_messages = warning;
DO $$
DECLARE
  r record;
  readd text[] := '{}';
  stmt text;
  anchor regclass;
BEGIN
  FOREACH stmt IN ARRAY ARRAY['accounts', 'api_keys'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = stmt::regclass AND repmodel = 't') THEN
      PERFORM create_reference_table(stmt::regclass);
    END IF;
  END LOOP;

  -- Account-owned tables not distributed yet (the reference tables' foreign keys made them Citus
  -- local tables, which create_distributed_table takes as they are).
  CREATE TEMP TABLE pending_tables ON COMMIT DROP AS
    SELECT c.oid::regclass AS tbl, c.relname
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
      AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid AND p.partmethod = 'h');
  IF NOT EXISTS (SELECT 1 FROM pending_tables) THEN
    RETURN;
  END IF;

  FOR r IN
    SELECT k.conrelid::regclass AS tbl, k.conname, pg_get_constraintdef(k.oid) AS def
    FROM pg_constraint k
    WHERE k.contype = 'f'
      AND (k.conrelid IN (SELECT tbl FROM pending_tables) OR k.confrelid IN (SELECT tbl FROM pending_tables))
      AND k.confrelid NOT IN ('accounts'::regclass, 'api_keys'::regclass)
  LOOP
    readd := readd || format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.tbl, r.conname, r.def);
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.tbl, r.conname);
  END LOOP;

  -- The colocation anchor: customers, distributed first when it is not yet.
  anchor := 'customers'::regclass;
  IF EXISTS (SELECT 1 FROM pending_tables WHERE tbl = anchor) THEN
    PERFORM create_distributed_table(anchor, 'team_id', colocate_with => 'none');
  END IF;
  FOR r IN SELECT tbl FROM pending_tables WHERE tbl <> anchor ORDER BY relname LOOP
    PERFORM create_distributed_table(r.tbl, 'team_id', colocate_with => 'customers');
  END LOOP;

  FOREACH stmt IN ARRAY readd LOOP
    EXECUTE stmt;
  END LOOP;
END
$$;
