-- A stored response (the Idempotency-Key's replay: a sale with ten items is 3.4 kB) passes the 2 kB past
-- which PostgreSQL compresses a row's text. lz4 compresses it in a fifth of the CPU pglz takes (3 against
-- 15 µs for that sale on PostgreSQL 15, docs/performance.md), in the write's own transaction. A server
-- built without lz4 (the embedded engine) refuses the method: the column then keeps pglz, and the
-- block swallows that one refusal only. Rows already stored keep their compression; reads handle both.
DO $$ BEGIN ALTER TABLE idempotency_keys ALTER COLUMN response_body SET COMPRESSION lz4; EXCEPTION WHEN feature_not_supported THEN NULL; END $$;
