// The event types of the change feed: `<object>.<action>` for every served resource (capture makes events of
// every committed change, whoever wrote it: the read-only resources change too), and the patterns a webhook
// endpoint may subscribe with (`customer.created`, `product.*`, `*`). All of it follows from the descriptors
// (resources/registry.ts).
import { eventObjectOf, type ResourceDescriptor } from '../resources/descriptor.ts';
import { RESOURCES } from '../resources/registry.ts';

export const EVENT_ACTIONS = ['created', 'updated', 'deleted'] as const;
export type EventAction = (typeof EVENT_ACTIONS)[number];

/** Resource (URL and scope name) → the object word of its event types, for every resource: any may be
 *  given a write side, and the feed shows the events of every resource the caller may read. */
export const EVENT_OBJECTS: Readonly<Record<string, string>> = Object.fromEntries(RESOURCES.map((d) => [d.name, eventObjectOf(d)]));

export const EVENT_RESOURCES: readonly string[] = RESOURCES.map((d) => d.name);

/** The event types of the resources: `<object>.<action>` for each one. */
export const eventTypesOf = (resources: readonly ResourceDescriptor[]): string[] =>
  resources.flatMap((d) => EVENT_ACTIONS.map((a) => `${eventObjectOf(d)}.${a}`));

export const EVENT_TYPES: readonly string[] = eventTypesOf(RESOURCES);

/** Every pattern an endpoint may list in `enabled_events`. */
export const EVENT_PATTERNS: readonly string[] = ['*', ...RESOURCES.map((d) => `${eventObjectOf(d)}.*`), ...EVENT_TYPES];

export const eventType = (object: string, action: EventAction): string => `${object}.${action}`;

/** The patterns that match an event type: itself, `<object>.*` and `*`. */
export function patternsMatching(type: string): string[] {
  const object = type.split('.', 1)[0];
  return [type, `${object}.*`, '*'];
}
