-- Events (the change feed) and webhooks. An event is written in the transaction of the change it
-- records; its deliveries (one per matching endpoint) too, so a change, its event and its
-- deliveries commit or vanish together. `resource` is the scope resource the event is about
-- (a key lists only the events of resources it may read). Ids are UUIDv7 made under the tenant's
-- `events` counter lock, so within a tenant (created_at, id) grows in commit order.
CREATE TABLE events (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  type text NOT NULL,
  resource text NOT NULL,
  data json NOT NULL,
  request_id text,
  created_at timestamptz NOT NULL
);
CREATE INDEX events_keyset ON events (team_id, mode, created_at, id);
CREATE INDEX events_retention ON events (created_at);

-- secret signs deliveries; previous_secret keeps signing until previous_secret_expires_at after
-- a rotation. failing_since is the time of the first failure since the last success: an endpoint
-- failing for 5 days is disabled with disabled_reason.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  url text NOT NULL,
  description text,
  enabled_events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (team_id, mode, created_at, id);

-- One delivery per (event, endpoint): the queue. A worker claims due rows with
-- FOR UPDATE SKIP LOCKED and holds them by lease_until/lease_owner while it posts; a lease that
-- runs out (a killed instance) makes the row claimable again.
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  lease_until timestamptz,
  lease_owner text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Every attempt as the endpoint's deliveries list shows it (with the tenant and the event type,
-- so the list reads one table of the tenant); response_body is cut to 1 kB.
CREATE TABLE webhook_attempts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  event_type text NOT NULL,
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  attempt_number integer NOT NULL,
  response_status integer,
  error text,
  response_body text,
  duration_ms integer NOT NULL,
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (team_id, mode, endpoint_id, created_at, id);
