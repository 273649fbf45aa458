// The LISTEN/NOTIFY channels that wake readers of events: long polls (per tenant) and delivery workers.

export const EVENTS_CHANNEL = 'balcao_events';
export const DELIVERIES_CHANNEL = 'balcao_webhook_deliveries';

/** The payload of an events NOTIFY: the tenant, so only its waiters wake. */
export const tenantChannelKey = (accountId: string, mode: string): string => `${accountId}:${mode}`;
