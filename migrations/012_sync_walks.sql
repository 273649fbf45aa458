-- Digests and id walks (issue 49): per list table, the tenant's records in id order with their updated_at, in
-- the index itself. A digest hashes `<id>:<updated_at>` lines in id order: with this index it is one index-only
-- range scan (no sort, no heap fetch), where the (team_id, id) key would fetch each row at random (ids are random
-- UUIDs, rows are stored in insertion order). `filter[id][gt|gte|lt|lte]` walks use it as well. The predicates
-- are the descriptors' fixed conditions, spelled as the keyset indexes spell them so the planner matches them.
-- New indexes only: safe while the release before it serves (docs/operations.md, "expand, then contract"). On a
-- large live database an operator may build them first with CREATE INDEX CONCURRENTLY under the same names.
CREATE INDEX IF NOT EXISTS customers_sync ON customers (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS transactions_sync ON transactions (team_id, mode, id) INCLUDE (updated_at) WHERE transaction_type IN ('sale', 'order');
CREATE INDEX IF NOT EXISTS suppliers_sync ON suppliers (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS expenses_sync ON expenses (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS appointments_sync ON appointments (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS services_sync ON services (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS catalog_items_sync ON catalog_items (team_id, mode, id) INCLUDE (updated_at) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS inventory_items_sync ON inventory_items (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS bank_accounts_sync ON bank_accounts (team_id, mode, id) INCLUDE (updated_at);
CREATE INDEX IF NOT EXISTS deals_sync ON deals (team_id, mode, id) INCLUDE (updated_at);
