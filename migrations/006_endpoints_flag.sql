-- Whether a tenant may have an enabled webhook endpoint, on its events counter row (the row every event's
-- statement locks and moves on): an event of a tenant without one skips the fan-out of deliveries, and the
-- flag, read under that lock, tells it when an endpoint appeared meanwhile (src/events/fan-out.ts). Kept by
-- every change of an endpoint (src/webhooks/endpoint-repository.ts); an endpoint disabled after failing
-- leaves it set, which only costs a fan-out that finds nothing. A tenant with endpoints but no event yet
-- gets its row here, at 0: its first event moves it to 1, as when the row is created by that event.
ALTER TABLE tenant_counters ADD COLUMN has_endpoints boolean NOT NULL DEFAULT false;
INSERT INTO tenant_counters (team_id, mode, name, value, has_endpoints)
SELECT DISTINCT team_id, mode, 'events', 0, true FROM webhook_endpoints WHERE enabled
ON CONFLICT (team_id, mode, name) DO UPDATE SET has_endpoints = true;
