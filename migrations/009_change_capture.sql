-- Change capture (docs/events.md): events are made from the changes committed to the served tables, by any
-- writer, instead of by the API's writes themselves. `origin` says who made the change ({"type": "api",
-- "key_id", "request_id"} or {"type": "outside"}); `origin_key_id` is the key, kept apart to be filtered on.
ALTER TABLE events ADD COLUMN origin json;
ALTER TABLE events ADD COLUMN origin_key_id uuid;

-- How far capture has turned committed changes into events, per source: on PostgreSQL a logical replication
-- slot (the position is a WAL position, as a number), on the embedded database the change log below (a seq).
-- Events and the new position commit together, and a capturer moves the position only from the value it read
-- (compare and set): a change becomes events exactly once, even when two capturers overlap.
CREATE TABLE capture_progress (
  source text PRIMARY KEY,
  position bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The embedded database's change log: PGlite has no logical decoding, so triggers on the served tables record
-- each row change here (with the transaction's id), and capture reads and empties it in order. Unused on
-- PostgreSQL, where the write-ahead log is the change log.
CREATE TABLE capture_outbox (
  seq bigserial PRIMARY KEY,
  txid bigint NOT NULL,
  table_name text NOT NULL,
  op text NOT NULL,
  old_row jsonb,
  new_row jsonb,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A write through the API marks its transaction with its origin (a transactional logical message, read by the
-- capture beside the transaction's changes). The embedded database's capture set-up replaces it with one that
-- writes the mark to its change log (src/events/capture/setup.ts).
CREATE OR REPLACE FUNCTION balcao_mark_origin(origin text) RETURNS text LANGUAGE sql AS $$ SELECT pg_logical_emit_message(true, 'balcao.origin', origin)::text $$;
