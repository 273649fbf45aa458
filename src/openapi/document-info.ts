// The document's `info`, `servers` and security scheme: the overview integrators read first,
// with its numbers taken from the code (plans, page sizes) rather than restated.
import type { Config } from '../config.ts';
import { PLAN_CODES, PLANS } from '../domain/plans.ts';
import { ANONYMOUS_PER_MINUTE } from '../http/rate-limit.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../query/plan.ts';
import { ERROR_PAGES_PATH, EXAMPLE_ERRORS_URL } from './problem-responses.ts';
import { thousands } from '../schemas/plain-text.ts';
import { type ResourceDescriptor, writableOf } from '../resources/descriptor.ts';

export const API_TITLE = 'Balcão API';
export const API_VERSION = '1.0.0';
export const SECURITY_SCHEME = 'bearerAuth';

function planTable(): string {
  const rows = PLAN_CODES.map((code) => {
    const { rateLimits: r, simultaneousKeys } = PLANS[code];
    return `| \`${code}\` | ${r.burst_per_second} | ${thousands(r.requests_per_minute_read)} | ${thousands(r.requests_per_minute_write)} | ${thousands(r.requests_per_day_total)} | ${simultaneousKeys} |`;
  });
  return ['| plan_code | Burst/s | Reads/min | Writes/min | Requests/day | Keys |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

function description(config: Config, resources: readonly ResourceDescriptor[]): string {
  const writable = writableOf(resources).map((d) => d.name);
  return `The data of one account (${writable.join(', ')} and read-only resources), identified by the API key in use.

## Authentication
Send \`Authorization: Bearer <API_KEY>\` on every request. Keys look like \`${config.keyBrand}_live_…\` (live data) or \`${config.keyBrand}_test_…\` (a separate test-mode sandbox) and are issued by the provider. Each resource needs a scope on the key (\`<resource>:read\`, \`<resource>:write\`; \`*:read\`, \`*:write\`) and its module on the account's contract. \`GET /v1/me\` needs neither. This document, \`/docs\` and \`/errors\` are public.

## Envelopes
One item: \`{ "data": {…}, "meta": { "request_id": "…" } }\`. A list: \`{ "data": […], "pagination": { "next_cursor", "has_more", "limit" }, "meta": { "request_id" } }\`. Every response carries \`X-Request-Id\`.

## Lists
\`limit\` (1..${MAX_LIMIT}, default ${DEFAULT_LIMIT}), \`cursor\`, \`sort\` (one field, \`-\` for descending), \`fields\` and \`filter[<field>][<operator>]=<value>\` with \`eq\`, \`neq\`, \`gt\`, \`gte\`, \`lt\`, \`lte\`, \`in\`, \`nin\` (comma lists), \`ilike\` (\`%\` wildcard) and \`is_null\` (\`true\`/\`false\`). Filters combine with AND. To read everything, repeat the same query with \`cursor=<pagination.next_cursor>\` while \`pagination.has_more\` is true.

## Errors
Failures are \`application/problem+json\` with \`type\` (\`<errors address>/<code>\`, e.g. \`${EXAMPLE_ERRORS_URL}/validation\`; decide by the code), \`title\`, \`status\`, \`detail\`, \`instance\`, \`request_id\`, and \`errors[]\` on a 422 about the body. Any other method on a listed path answers 405 \`method_not_allowed\` with an \`Allow\` header. One page per type, served by the API itself: [${ERROR_PAGES_PATH}](${ERROR_PAGES_PATH}).

## Rate limits
Per key, three layers at once: per second (all requests), per minute (reads and writes counted apart) and per day (all requests). Every authenticated response carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`; a 429 \`rate-limit-exceeded\` also carries \`Retry-After\` (seconds). The effective values of a key are in \`GET /v1/me\`. Requests without a usable key are limited by address (${ANONYMOUS_PER_MINUTE} per minute).

${planTable()}

## Idempotency
A POST with an \`Idempotency-Key\` header (1..255 characters) can be retried safely: within 24 hours the same key, method, path and body replay the first response with \`Idempotent-Replay: true\`.

## Versioning
The version is in the path (\`/v1\`). Error \`type\` identifiers are stable; titles and details may change.`;
}

/** `resources`: the served ones; which of them accept writes comes from their descriptors. */
export function documentInfo(config: Config, resources: readonly ResourceDescriptor[]) {
  return {
    title: API_TITLE,
    version: API_VERSION,
    summary: 'Read and write the data of your own Balcão account.',
    description: description(config, resources),
  };
}

export function securityScheme(config: Config) {
  return {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: `${config.keyBrand}_live_… or ${config.keyBrand}_test_…`,
    description: 'An API key issued by the provider, sent as `Authorization: Bearer <API_KEY>`.',
  };
}
