// The event types of the change feed: `<object>.<action>` for each writable resource, and the
// patterns a webhook endpoint may subscribe with (`customer.created`, `sale.*`, `*`). All of it
// follows from the descriptors (resources/registry.ts): a resource made writable records events.
import { eventObjectOf, type ResourceDescriptor, writableOf } from '../resources/descriptor.ts';
import { RESOURCES } from '../resources/registry.ts';

export const EVENT_ACTIONS = ['created', 'updated', 'deleted'] as const;
export type EventAction = (typeof EVENT_ACTIONS)[number];

/** Resource (URL and scope name) → the object word of its event types, for every resource: any may be
 *  given a write side, and the feed shows the events of every resource the caller may read. */
export const EVENT_OBJECTS: Readonly<Record<string, string>> = Object.fromEntries(RESOURCES.map((d) => [d.name, eventObjectOf(d)]));

export const EVENT_RESOURCES: readonly string[] = RESOURCES.map((d) => d.name);

/** The event types the resources record: `<object>.<action>` for each one with a write side. */
export const eventTypesOf = (resources: readonly ResourceDescriptor[]): string[] =>
  writableOf(resources).flatMap((d) => EVENT_ACTIONS.map((a) => `${eventObjectOf(d)}.${a}`));

export const EVENT_TYPES: readonly string[] = eventTypesOf(RESOURCES);

/** Every pattern an endpoint may list in `enabled_events`. */
export const EVENT_PATTERNS: readonly string[] = ['*', ...writableOf(RESOURCES).map((d) => `${eventObjectOf(d)}.*`), ...EVENT_TYPES];

export const eventType = (object: string, action: EventAction): string => `${object}.${action}`;

/** The patterns that match an event type: itself, `<object>.*` and `*`. */
export function patternsMatching(type: string): string[] {
  const object = type.split('.', 1)[0];
  return [type, `${object}.*`, '*'];
}
