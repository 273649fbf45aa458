// The LISTEN/NOTIFY channels that wake readers of events: long polls (per tenant) and delivery workers.

export const EVENTS_CHANNEL = 'balcao_events';
export const DELIVERIES_CHANNEL = 'balcao_webhook_deliveries';
// The payload of an events NOTIFY is the tenant's key (domain/tenant.ts tenantKey), so only its waiters wake.
