-- The write log's foreign key to accounts, dropped. An entry's account is the authenticated key's, never a client's,
-- and entries are purged after 24 hours; the key only added to every write through the API a check that reads and
-- locks the account's row (FOR KEY SHARE), shared by concurrent writes of one account as a multixact: about a tenth
-- of the database's work for a PATCH (docs/performance.md).
ALTER TABLE request_log DROP CONSTRAINT IF EXISTS request_log_team_id_fkey;
