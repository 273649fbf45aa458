// The headers of the document: request parameters (X-Request-Id, Idempotency-Key) and the
// response headers of SPEC parts 1 and 8, once each in `components`, referenced everywhere.
import { NO_NUL_PATTERN } from '../schemas/bounds.ts';

type HeaderObject = { description: string; required?: boolean; schema: Record<string, unknown>; example?: unknown };

export const REQUEST_ID_PATTERN = '^[A-Za-z0-9_-]{1,128}$';

/** Response headers by component name (the name is the header as sent). */
export const RESPONSE_HEADERS = {
  'X-Request-Id': {
    description:
      'Id of this request: the client-supplied `X-Request-Id` when valid, otherwise a new UUID. Equals `meta.request_id` / `request_id`.',
    required: true,
    schema: { type: 'string', maxLength: 128, pattern: REQUEST_ID_PATTERN },
    example: '7f1c5d0e-6a43-4b8e-9d0a-2f4d1c9b8e71',
  },
  'X-RateLimit-Limit': {
    description: 'Ceiling of the minute window (reads or writes) applied to this key; on a 429, the ceiling of the layer exceeded.',
    required: true,
    schema: { type: 'integer', format: 'int64', minimum: 0 },
    example: 300,
  },
  'X-RateLimit-Remaining': {
    description: 'Empty on success responses; `0` on a 429.',
    required: true,
    schema: { type: 'string', pattern: '^[0-9]*$' },
    example: '',
  },
  'X-RateLimit-Reset': {
    description: 'Unix time (seconds) when the window restarts.',
    required: true,
    schema: { type: 'integer', format: 'int64', minimum: 0 },
    example: 1795514460,
  },
  'Retry-After': {
    description:
      'Seconds to wait before retrying: 1, 60 or 86400 after a rate limit (per second, minute or day); 1 for an idempotent request still running.',
    required: true,
    schema: { type: 'integer', format: 'int64', minimum: 0 },
    example: 60,
  },
  'Idempotent-Replay': {
    description: 'Present, `true`, when this is the stored response of an earlier request with the same `Idempotency-Key`.',
    required: false,
    schema: { type: 'string', enum: ['true'] },
  },
  ETag: {
    description:
      'Strong tag of the record version: opaque, compare it byte for byte. It changes when, and only when, the record changes; ' +
      'send it back in `If-None-Match` (GET) or `If-Match` (PATCH, DELETE).',
    required: true,
    schema: { type: 'string' },
    example: '"k3v9TqL0d2Xc8Jm1Rw5Yb7Nf4Hs6Pa2"',
  },
  'Balcao-Upsert': {
    description:
      'What an upsert (`PUT …/by-external-id/{external_id}`) did: `created` (201), `updated`, or `unchanged` (nothing was written, ' +
      'no event emitted; `updated_at` and the `ETag` stay).',
    required: true,
    schema: { type: 'string', enum: ['created', 'updated', 'unchanged'] },
    example: 'created',
  },
  Location: {
    description: 'The path of the record created: `/v1/<resource>/<id>`.',
    required: true,
    schema: { type: 'string', maxLength: 64 },
    example: '/v1/customers/3f2b8c1e-9d4a-4e7b-8a61-5c0d2e9f7b13',
  },
  Allow: {
    description: 'The methods this path accepts.',
    required: true,
    schema: { type: 'string' },
    example: 'GET, POST',
  },
} as const satisfies Record<string, HeaderObject>;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;

/** The headers of a deprecated route's answers (http/deprecation.ts), written inline: only deprecated routes carry them. */
export const DEPRECATION_HEADERS = {
  Deprecation: {
    description: 'RFC 9745: when the route was deprecated, as `@<unix seconds>`.',
    required: true,
    schema: { type: 'string', pattern: '^@-?\\d+$', maxLength: 24 },
  },
  Sunset: {
    description: 'RFC 8594: the HTTP-date from which the route may stop working.',
    required: true,
    schema: { type: 'string', maxLength: 64 },
  },
  Link: {
    description: 'The changelog that explains the deprecation: `<{public URL}/changelog>; rel="deprecation"`.',
    required: true,
    schema: { type: 'string', maxLength: 2048 },
  },
} as const;

export const RATE_LIMIT_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
] as const satisfies readonly ResponseHeaderName[];

/** A header reference, or, when the header may be absent here, an inline copy that says so. */
export function headerUse(name: ResponseHeaderName, presence: 'always' | 'sometimes', when?: string): Record<string, unknown> {
  if (presence === 'always' && RESPONSE_HEADERS[name].required) return { $ref: `#/components/headers/${name}` };
  const { description, schema } = RESPONSE_HEADERS[name];
  return { description: when ? `${description} ${when}` : description, required: false, schema };
}

export const REQUEST_PARAMETERS = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description:
      'Your own id for this request (up to 128 letters, digits, `_`, `-`); it is echoed in the response. Anything else is replaced.',
    schema: { type: 'string', maxLength: 128, pattern: REQUEST_ID_PATTERN },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: the first response is kept 24 hours per API key and replayed (with `Idempotent-Replay: true`) ' +
      'for the same method, path and body. The same key with another body, method or path is a 409 `idempotency_conflict`, as is ' +
      'a retry while the first request is still running (with `Retry-After: 1`). Over 255 characters is a 422.',
    // An HTTP header never holds U+0000: the pattern only says so, for generators and linters.
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: NO_NUL_PATTERN },
    example: '5b0a3c1e-2f7d-4d8a-9c61-0e4b7a2d9f13',
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'Write only if the record is still at this version: an `ETag` of it, a comma list of them, or `*` (any version). Otherwise ' +
      '412 `precondition_failed` and nothing is written; the comparison and the write are atomic.',
    schema: { type: 'string', maxLength: 1024, pattern: NO_NUL_PATTERN },
    example: '"k3v9TqL0d2Xc8Jm1Rw5Yb7Nf4Hs6Pa2"',
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'An `ETag` you hold (a comma list of them, or `*`): while it is current the answer is 304 with no body.',
    schema: { type: 'string', maxLength: 1024, pattern: NO_NUL_PATTERN },
    example: '"k3v9TqL0d2Xc8Jm1Rw5Yb7Nf4Hs6Pa2"',
  },
} as const;
