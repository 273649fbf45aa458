-- The purges of events (30 days) and of the write log (24 hours) now walk each tenant's keyset index
-- (src/events/event-retention.ts, src/resources/request-log.ts): the indexes on created_at alone served
-- only them, and cost every write that records an event or a log entry an index entry each (about 10 µs
-- of PostgreSQL's CPU apiece, docs/performance.md). A release before this one still purges correctly
-- without them, by a scan of the table.
DROP INDEX IF EXISTS events_retention;
DROP INDEX IF EXISTS request_log_retention;
