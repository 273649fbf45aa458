// The event types of the change feed: `<object>.<action>` for each writable resource, and the
// patterns a webhook endpoint may subscribe with (`customer.created`, `sale.*`, `*`).
import type { ScopeResource } from '../domain/scopes.ts';

export const EVENT_ACTIONS = ['created', 'updated', 'deleted'] as const;
export type EventAction = (typeof EVENT_ACTIONS)[number];

/** Resource (URL and scope name) → the object word of its event types. */
export const EVENT_OBJECTS = {
  customers: 'customer',
  sales: 'sale',
  suppliers: 'supplier',
  expenses: 'expense',
} as const satisfies Partial<Record<ScopeResource, string>>;

export type EventResource = keyof typeof EVENT_OBJECTS;
export const EVENT_RESOURCES = Object.keys(EVENT_OBJECTS) as EventResource[];

export const EVENT_TYPES: readonly string[] = EVENT_RESOURCES.flatMap((r) => EVENT_ACTIONS.map((a) => `${EVENT_OBJECTS[r]}.${a}`));

/** Every pattern an endpoint may list in `enabled_events`. */
export const EVENT_PATTERNS: readonly string[] = ['*', ...EVENT_RESOURCES.map((r) => `${EVENT_OBJECTS[r]}.*`), ...EVENT_TYPES];

export const isEventResource = (name: string): name is EventResource => name in EVENT_OBJECTS;

export const eventType = (resource: EventResource, action: EventAction): string => `${EVENT_OBJECTS[resource]}.${action}`;

/** The patterns that match an event type: itself, `<object>.*` and `*`. */
export function patternsMatching(type: string): string[] {
  const object = type.split('.', 1)[0];
  return [type, `${object}.*`, '*'];
}
