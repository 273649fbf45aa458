-- External ids (issue 49): the integrator's own id of a customer, sale, supplier or expense, unique per account,
-- mode and resource for ever (not for the 24 hours of an Idempotency-Key), so `PUT …/by-external-id/{id}` can
-- create a record once and update it after. The unique indexes are partial: most records carry none. The sales'
-- index covers the rows the API serves as sales (its keyset indexes' predicate), so a quote never blocks a sale.
ALTER TABLE customers ADD COLUMN external_id text;
ALTER TABLE transactions ADD COLUMN external_id text;
ALTER TABLE suppliers ADD COLUMN external_id text;
ALTER TABLE expenses ADD COLUMN external_id text;
CREATE UNIQUE INDEX customers_external_id_key ON customers (team_id, mode, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX transactions_external_id_key ON transactions (team_id, mode, external_id)
  WHERE external_id IS NOT NULL AND transaction_type IN ('sale', 'order');
CREATE UNIQUE INDEX suppliers_external_id_key ON suppliers (team_id, mode, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX expenses_external_id_key ON expenses (team_id, mode, external_id) WHERE external_id IS NOT NULL;

-- No echoes (issue 49): the API keys (their ids, lowercase) whose events a webhook endpoint is not sent: an
-- integration's own writes.
ALTER TABLE webhook_endpoints ADD COLUMN excluded_key_ids text[] NOT NULL DEFAULT '{}';
