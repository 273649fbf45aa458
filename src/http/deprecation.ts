// Deprecated routes and fields (docs/api-guide.md, "Versions and deprecation"). A route is marked in
// its config (`config.deprecated`, which a resource descriptor's `deprecated` fills); a body field by
// `deprecatedField` on its schema. The description then says `deprecated: true`, and every answer to
// a deprecated route, or to a body that sends a deprecated field, carries
//   Deprecation: @<unix seconds>                      (RFC 9745: when it was deprecated)
//   Sunset: <HTTP-date>                               (RFC 8594: when it may stop working)
//   Link: <…/changelog>; rel="deprecation"            (RFC 9745: where it is explained)
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface DeprecationNotice {
  /** The day it was deprecated, `YYYY-MM-DD` (UTC). */
  since: string;
  /** The first day it may be gone, `YYYY-MM-DD` (UTC): at least 6 months after `since` (the policy). */
  sunset: string;
  /** What to use instead, for the description. */
  instead?: string;
}

/** Where the changelog is served (src/docs/changelog-page.ts), under the public URL. */
export const CHANGELOG_PATH = '/changelog';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route is deprecated. */
    deprecated?: DeprecationNotice;
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The three headers of a notice. Throws on a malformed notice: a route table mistake, found at start-up. */
export function deprecationHeaders(notice: DeprecationNotice, changelogUrl: string): Record<string, string> {
  if (!DAY.test(notice.since) || !DAY.test(notice.sunset) || notice.sunset <= notice.since) {
    throw new Error(`deprecation notice needs since < sunset, both YYYY-MM-DD: ${JSON.stringify(notice)}`);
  }
  return {
    deprecation: `@${Date.parse(`${notice.since}T00:00:00Z`) / 1000}`,
    sunset: new Date(`${notice.sunset}T00:00:00Z`).toUTCString(),
    link: `<${changelogUrl}>; rel="deprecation"; type="text/markdown"`,
  };
}

/** The one sentence the description adds to a deprecated route or field. */
export function deprecationText(notice: DeprecationNotice): string {
  return `Deprecated since ${notice.since}; may be removed from ${notice.sunset} (see the changelog).${notice.instead ? ` Use ${notice.instead} instead.` : ''}`;
}

/** Marks a body field deprecated: `deprecated: true` in the description, and the headers on answers to bodies that send it. */
export function deprecatedField<T extends TSchema>(schema: T, notice: DeprecationNotice): T {
  const text = deprecationText(notice);
  return Object.assign(schema, {
    deprecated: true,
    'x-deprecation': notice,
    description: schema.description ? `${schema.description} ${text}` : text,
  });
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
const append = (existing: Hook | Hook[] | undefined, hook: Hook): Hook[] => [...(existing ? [existing].flat() : []), hook];

/** Adds the headers to the answers of deprecated routes, and of bodies sending deprecated fields: hooks on
 *  those routes only (added as they register), so other routes pay nothing. */
export function registerDeprecation(app: FastifyInstance, publicUrl: string): void {
  const changelogUrl = `${publicUrl}${CHANGELOG_PATH}`;
  app.addHook('onRoute', (route) => {
    const notice = route.config?.deprecated;
    if (notice) {
      const headers = deprecationHeaders(notice, changelogUrl);
      route.onRequest = append(route.onRequest as Hook | Hook[] | undefined, (_request, reply, done) => {
        reply.headers(headers);
        done();
      });
    }
    const properties = (route.schema?.body as { properties?: Record<string, { 'x-deprecation'?: DeprecationNotice }> } | undefined)
      ?.properties;
    const fields = Object.entries(properties ?? {}).flatMap(([name, s]): [string, Record<string, string>][] =>
      s['x-deprecation'] ? [[name, deprecationHeaders(s['x-deprecation'], changelogUrl)]] : [],
    );
    if (fields.length > 0) {
      route.preValidation = append(route.preValidation as Hook | Hook[] | undefined, (request, reply, done) => {
        const body = request.body;
        const sent = body && typeof body === 'object' ? fields.find(([name]) => Object.hasOwn(body, name)) : undefined;
        if (sent) reply.headers(sent[1]);
        done();
      });
    }
  });
}
