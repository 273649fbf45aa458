-- Citus-ready keys (issue 27, docs/scale-out.md): every account-owned table (one with team_id) keys
-- its rows by (team_id, id), its unique constraints include team_id, and its foreign keys to other
-- account-owned tables carry team_id, so Citus can distribute them all by team_id, co-located: a
-- tenant's rows, and every join and foreign key between them, stay on one node.
-- Locks and cost (no table is rewritten except webhook_deliveries, a queue, by its backfill):
-- - each new primary key's unique index is built under the ACCESS EXCLUSIVE lock of the migration's
--   transaction. On a large table the operator builds it beforehand without blocking writes
--   (CREATE UNIQUE INDEX CONCURRENTLY <table>_team_pkey ON <table> (team_id, id), outside any
--   transaction): the IF NOT EXISTS below then finds it, and the key swap is a catalog change;
-- - the foreign keys are re-added NOT VALID, then validated: a scan of each referencing table (items,
--   status history, deliveries, attempts) with index lookups into the referenced one. The migration
--   is one transaction, so every lock it takes (ACCESS EXCLUSIVE on each account-owned table) lasts
--   until it commits: with the indexes built beforehand, that window is the catalog changes, the
--   deliveries' backfill and these scans.
-- The six foreign keys between account-owned tables depend on the old single-column keys: they go
-- first and come back with team_id.

ALTER TABLE transaction_items DROP CONSTRAINT transaction_items_transaction_id_fkey;
ALTER TABLE transaction_status_history DROP CONSTRAINT transaction_status_history_transaction_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_endpoint_id_fkey;

-- A delivery belongs to its endpoint's tenant (the same as its event's).
ALTER TABLE webhook_deliveries ADD COLUMN team_id uuid REFERENCES accounts (id);
UPDATE webhook_deliveries d SET team_id = e.team_id FROM webhook_endpoints e WHERE e.id = d.endpoint_id;
ALTER TABLE webhook_deliveries ALTER COLUMN team_id SET NOT NULL;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_event_id_key UNIQUE (team_id, endpoint_id, event_id);
DROP INDEX webhook_deliveries_event;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (team_id, event_id);

-- The event counter keeps the time of the tenant's last event, so the next one is never dated
-- earlier (src/events/record-event.ts): the time is taken under the counter's lock that way,
-- without a volatile function in RETURNING, which Citus refuses.
ALTER TABLE tenant_counters ADD COLUMN last_at timestamptz;

CREATE UNIQUE INDEX IF NOT EXISTS customers_team_pkey ON customers (team_id, id);
ALTER TABLE customers DROP CONSTRAINT customers_pkey, ADD CONSTRAINT customers_pkey PRIMARY KEY USING INDEX customers_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS transactions_team_pkey ON transactions (team_id, id);
ALTER TABLE transactions DROP CONSTRAINT transactions_pkey, ADD CONSTRAINT transactions_pkey PRIMARY KEY USING INDEX transactions_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS transaction_items_team_pkey ON transaction_items (team_id, id);
ALTER TABLE transaction_items DROP CONSTRAINT transaction_items_pkey, ADD CONSTRAINT transaction_items_pkey PRIMARY KEY USING INDEX transaction_items_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS transaction_status_history_team_pkey ON transaction_status_history (team_id, id);
ALTER TABLE transaction_status_history DROP CONSTRAINT transaction_status_history_pkey, ADD CONSTRAINT transaction_status_history_pkey PRIMARY KEY USING INDEX transaction_status_history_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS suppliers_team_pkey ON suppliers (team_id, id);
ALTER TABLE suppliers DROP CONSTRAINT suppliers_pkey, ADD CONSTRAINT suppliers_pkey PRIMARY KEY USING INDEX suppliers_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS bank_accounts_team_pkey ON bank_accounts (team_id, id);
ALTER TABLE bank_accounts DROP CONSTRAINT bank_accounts_pkey, ADD CONSTRAINT bank_accounts_pkey PRIMARY KEY USING INDEX bank_accounts_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS recurring_expenses_team_pkey ON recurring_expenses (team_id, id);
ALTER TABLE recurring_expenses DROP CONSTRAINT recurring_expenses_pkey, ADD CONSTRAINT recurring_expenses_pkey PRIMARY KEY USING INDEX recurring_expenses_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS expenses_team_pkey ON expenses (team_id, id);
ALTER TABLE expenses DROP CONSTRAINT expenses_pkey, ADD CONSTRAINT expenses_pkey PRIMARY KEY USING INDEX expenses_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS services_team_pkey ON services (team_id, id);
ALTER TABLE services DROP CONSTRAINT services_pkey, ADD CONSTRAINT services_pkey PRIMARY KEY USING INDEX services_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS appointments_team_pkey ON appointments (team_id, id);
ALTER TABLE appointments DROP CONSTRAINT appointments_pkey, ADD CONSTRAINT appointments_pkey PRIMARY KEY USING INDEX appointments_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS catalog_items_team_pkey ON catalog_items (team_id, id);
ALTER TABLE catalog_items DROP CONSTRAINT catalog_items_pkey, ADD CONSTRAINT catalog_items_pkey PRIMARY KEY USING INDEX catalog_items_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS inventory_items_team_pkey ON inventory_items (team_id, id);
ALTER TABLE inventory_items DROP CONSTRAINT inventory_items_pkey, ADD CONSTRAINT inventory_items_pkey PRIMARY KEY USING INDEX inventory_items_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS deal_stages_team_pkey ON deal_stages (team_id, id);
ALTER TABLE deal_stages DROP CONSTRAINT deal_stages_pkey, ADD CONSTRAINT deal_stages_pkey PRIMARY KEY USING INDEX deal_stages_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS deals_team_pkey ON deals (team_id, id);
ALTER TABLE deals DROP CONSTRAINT deals_pkey, ADD CONSTRAINT deals_pkey PRIMARY KEY USING INDEX deals_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS events_team_pkey ON events (team_id, id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD CONSTRAINT events_pkey PRIMARY KEY USING INDEX events_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_endpoints_team_pkey ON webhook_endpoints (team_id, id);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey, ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY USING INDEX webhook_endpoints_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_deliveries_team_pkey ON webhook_deliveries (team_id, id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY USING INDEX webhook_deliveries_team_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_attempts_team_pkey ON webhook_attempts (team_id, id);
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY USING INDEX webhook_attempts_team_pkey;

ALTER TABLE transaction_items ADD CONSTRAINT transaction_items_transaction_id_fkey FOREIGN KEY (team_id, transaction_id) REFERENCES transactions (team_id, id) NOT VALID;
ALTER TABLE transaction_status_history ADD CONSTRAINT transaction_status_history_transaction_id_fkey FOREIGN KEY (team_id, transaction_id) REFERENCES transactions (team_id, id) NOT VALID;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (team_id, endpoint_id) REFERENCES webhook_endpoints (team_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (team_id, event_id) REFERENCES events (team_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_delivery_id_fkey FOREIGN KEY (team_id, delivery_id) REFERENCES webhook_deliveries (team_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_endpoint_id_fkey FOREIGN KEY (team_id, endpoint_id) REFERENCES webhook_endpoints (team_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE transaction_items VALIDATE CONSTRAINT transaction_items_transaction_id_fkey;
ALTER TABLE transaction_status_history VALIDATE CONSTRAINT transaction_status_history_transaction_id_fkey;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_endpoint_id_fkey;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_attempts VALIDATE CONSTRAINT webhook_attempts_delivery_id_fkey;
ALTER TABLE webhook_attempts VALIDATE CONSTRAINT webhook_attempts_endpoint_id_fkey;
