-- Idempotency claims (DECISIONS B.12). claim_token identifies the request holding a key, so only
-- it may complete or release the claim; committed is set inside the write's own transaction, so
-- a claim whose request died before committing can be taken over, and one that committed never
-- runs again; response_content_type lets a replay answer exactly as the first response did.
ALTER TABLE idempotency_keys ADD COLUMN claim_token uuid;
ALTER TABLE idempotency_keys ADD COLUMN committed boolean NOT NULL DEFAULT false;
ALTER TABLE idempotency_keys ADD COLUMN response_content_type text;
