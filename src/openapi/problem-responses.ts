// The problem responses of the document: which error types each route can answer with (from
// its facts, never from a per-route list), grouped by status into shared `components.responses`
// with the headers each carries and one example per type, built from the real error factories.
import { AppError, errors } from '../errors/app-error.ts';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../errors/catalogue.ts';
import { EXTERNAL_ID_RESOURCES, externalIdConflict } from '../resources/engines/external-id.ts';
import { headerUse, RATE_LIMIT_HEADERS } from './headers.ts';
import type { RouteFacts } from './route-facts.ts';
import { byCodeUnits } from '../schemas/plain-text.ts';

/** Methods whose body Fastify parses: each can meet a 413, a 415 or malformed JSON (422). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Refused after the key was charged: these carry the X-RateLimit-* headers. */
const AFTER_CHARGE = new Set<ErrorCode>([
  'api_disabled',
  'insufficient_scope',
  'module_not_enabled',
  'not_found',
  'idempotency_conflict',
  'precondition_failed',
  'external_id_conflict',
  'payload_too_large',
  'unsupported_media_type',
  'validation',
]);
/** Refused before any key is charged (counted against the client address instead). */
const BEFORE_CHARGE = new Set<ErrorCode>(['invalid_token', 'token_revoked', 'token_expired', 'ip_not_allowed']);

const STATUS_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'RequestTimeout',
  409: 'Conflict',
  412: 'PreconditionFailed',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  422: 'ValidationFailed',
  429: 'TooManyRequests',
  431: 'RequestHeaderFieldsTooLarge',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** The error types a route can answer with. */
export function problemCodesFor(f: RouteFacts): ErrorCode[] {
  // Any request can be malformed, slow or oversized at the HTTP level, before any route is known.
  const codes = new Set<ErrorCode>(['internal_error', 'bad_request', 'request_timeout', 'header_too_large']);
  if (f.hasParams) codes.add('not_found');
  // Public API routes (the description) count against the caller IP's anonymous allowance.
  if (f.public && f.url.startsWith('/v1/')) codes.add('rate-limit-exceeded');
  if (!f.public) {
    for (const c of ['invalid_token', 'token_revoked', 'token_expired', 'ip_not_allowed', 'api_disabled'] as const) codes.add(c);
    for (const c of ['rate-limit-exceeded', 'service_unavailable'] as const) codes.add(c);
    if (f.resource && f.access) codes.add('insufficient_scope');
    if (f.module) codes.add('module_not_enabled');
    if (f.hasQuery || f.hasBody) codes.add('validation');
    if (f.method === 'POST') codes.add('idempotency_conflict').add('validation');
    // Conditional writes on a record (If-Match).
    if ((f.method === 'PATCH' || f.method === 'DELETE' || f.method === 'PUT') && f.access === 'write' && f.hasParams)
      codes.add('precondition_failed');
    // The upsert takes an Idempotency-Key as a creation does.
    if (f.method === 'PUT' && f.access === 'write') codes.add('idempotency_conflict');
    // A write that can set an external id can meet another record holding it.
    if (f.access === 'write' && f.method !== 'DELETE' && f.resource && EXTERNAL_ID_RESOURCES.has(f.resource))
      codes.add('external_id_conflict');
    if (BODY_METHODS.has(f.method)) codes.add('payload_too_large').add('unsupported_media_type').add('validation');
  }
  return ERROR_CODES.filter((c) => codes.has(c));
}

const pascal = (code: string) => code.replace(/(^|[_-])([a-z])/g, (_m, _sep, ch: string) => ch.toUpperCase());

/** Realistic problem bodies: each comes from the factory the code really throws. */
function sampleErrors(): Record<string, { summary: string; error: AppError }> {
  const samples: Record<string, { summary: string; error: AppError }> = {
    invalid_token: { summary: 'Missing, malformed or unknown key', error: errors.invalidToken() },
    token_revoked: { summary: 'Revoked key', error: errors.tokenRevoked() },
    token_expired: { summary: 'Expired key', error: errors.tokenExpired() },
    insufficient_scope: {
      summary: 'Key without the scope',
      error: errors.insufficientScope('This operation requires the scope customers:write.'),
    },
    api_disabled: { summary: 'API not enabled for the account', error: errors.apiDisabled() },
    module_not_enabled: { summary: 'Module not in the contract', error: errors.moduleNotEnabled('clientes') },
    ip_not_allowed: { summary: 'Caller outside the key IP list', error: errors.ipNotAllowed() },
    not_found: { summary: 'Unknown id, or a record of another account', error: errors.notFound() },
    method_not_allowed: { summary: 'Path exists, method does not', error: errors.methodNotAllowed(['GET', 'POST']) },
    idempotency_conflict: {
      summary: 'Idempotency-Key reused with another body',
      error: errors.idempotencyConflict(
        'This Idempotency-Key was already used with a different method, path or body; use a new key for a new request.',
      ),
    },
    idempotency_in_progress: {
      summary: 'First request with this Idempotency-Key still running (Retry-After: 1)',
      error: errors.idempotencyConflict('A request with this Idempotency-Key is still in progress; retry after it completes.'),
    },
    external_id_conflict: {
      summary: 'Another record already has this external_id',
      error: externalIdConflict('9b2e4f61-3c7a-4d15-8e0b-6a1f2c3d4e5f'),
    },
    precondition_failed: { summary: 'If-Match names a version that is no longer current', error: errors.preconditionFailed() },
    batch_aborted: { summary: 'Not written: another operation of the atomic batch failed', error: errors.batchAborted() },
    payload_too_large: { summary: 'Body over 1 MiB', error: errors.payloadTooLarge() },
    unsupported_media_type: { summary: 'Body not sent as JSON', error: errors.unsupportedMediaType() },
    validation_body: {
      summary: 'Refused body fields',
      error: errors.bodyInvalid([
        { field: 'items[0].quantity', code: 'too_small', message: 'Deve ser maior que 0.' },
        {
          field: 'items[0].catalog_type',
          code: 'invalid_enum',
          message: 'Valor não permitido; valores aceitos: product, service, package.',
        },
      ]),
    },
    validation_query: { summary: 'Refused query parameter', error: errors.queryInvalid('filter_field_not_allowed:stock') },
    'rate-limit-exceeded': { summary: 'A rate window is exhausted', error: new AppError('rate-limit-exceeded', { detail: 'per minute' }) },
    internal_error: { summary: 'Unexpected failure', error: errors.internal() },
    service_unavailable: { summary: 'Database unavailable', error: errors.serviceUnavailable() },
    bad_request: { summary: 'Malformed percent-escape in the path', error: errors.badUrl() },
    request_timeout: { summary: 'Headers or body too slow', error: errors.requestTimeout() },
    header_too_large: { summary: 'Request line and headers over 16 KiB', error: errors.headerTooLarge() },
  };
  return samples;
}

/**
 * The description is the same for every deployment: its examples show problem types under this example address
 * (a deployment sends `<BALCAO_ERRORS_URL>/<code>`), and its links go to the pages the server serves itself.
 */
export const EXAMPLE_ERRORS_URL = 'https://balcao.example.com/errors';
export const ERROR_PAGES_PATH = '/errors';

/** An example body of the given type, as the error handler would write it. */
export function sampleProblem(code: ErrorCode, errorsUrl: string): Record<string, unknown> {
  const sample = Object.values(sampleErrors()).find((x) => x.error.code === code);
  return problemExample(sample?.error ?? new AppError(code), errorsUrl, code === 'validation' ? '/v1/sales' : '/v1/customers');
}

export function problemExample(error: AppError, errorsUrl: string, instance: string): Record<string, unknown> {
  const body: Record<string, unknown> = {
    type: `${errorsUrl}/${error.code}`,
    title: ERROR_CATALOGUE[error.code].title,
    status: error.status,
  };
  if (error.detail !== undefined) body.detail = error.detail;
  body.instance = instance;
  body.request_id = '7f1c5d0e-6a43-4b8e-9d0a-2f4d1c9b8e71';
  if (error.errors) body.errors = error.errors;
  if (error.extensions) Object.assign(body, error.extensions);
  return body;
}

type Json = Record<string, unknown>;

/** Collects the problem responses the operations use, as named, shared components. */
export class ProblemResponses {
  private readonly responses = new Map<string, Json>();
  private readonly samples = sampleErrors();

  constructor(private readonly errorsUrl: string) {}

  /** `components.examples`: one per sample, keyed by sample name. */
  examples(): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const [name, { summary, error }] of Object.entries(this.samples)) {
      const instance = error.code === 'validation' && name === 'validation_body' ? '/v1/sales' : '/v1/customers';
      out[name] = { summary, value: problemExample(error, this.errorsUrl, instance) };
    }
    return out;
  }

  /** The `responses` entries of an operation that can fail with `codes`: status → $ref. */
  forOperation(codes: readonly ErrorCode[], isPublic: boolean): Record<string, Json> {
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of codes) {
      const { status } = ERROR_CATALOGUE[code];
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    const out: Record<string, Json> = {};
    for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b))
      out[String(status)] = { $ref: this.use(status, group, isPublic) };
    return out;
  }

  /** The 405 any other method on a documented path answers with. */
  methodNotAllowed(): string {
    return this.use(405, ['method_not_allowed'], true);
  }

  components(): Record<string, Json> {
    return Object.fromEntries([...this.responses].sort(([a], [b]) => byCodeUnits(a, b)));
  }

  private use(status: number, codes: readonly ErrorCode[], isPublic: boolean): string {
    const all = ERROR_CODES.filter((c) => ERROR_CATALOGUE[c].status === status);
    const base = STATUS_NAMES[status] ?? `Status${status}`;
    const subset = codes.length < all.length ? codes.map(pascal).join('Or') : '';
    const name = `${isPublic && status !== 405 ? 'Public' : ''}${base}${subset}`;
    if (!this.responses.has(name)) this.responses.set(name, this.build(status, codes, isPublic));
    return `#/components/responses/${name}`;
  }

  private build(status: number, codes: readonly ErrorCode[], isPublic: boolean): Json {
    const lines = codes.map((c) => `- [\`${c}\`](${ERROR_PAGES_PATH}/${c}): ${ERROR_CATALOGUE[c].description}`);
    const headers: Json = { 'X-Request-Id': headerUse('X-Request-Id', 'always') };
    if (!isPublic && !codes.every((c) => BEFORE_CHARGE.has(c))) {
      const always = codes.every((c) => AFTER_CHARGE.has(c));
      for (const h of RATE_LIMIT_HEADERS)
        headers[h] = headerUse(h, always ? 'always' : 'sometimes', 'Present when the request was counted against a key.');
    }
    if (status === 429) headers['Retry-After'] = headerUse('Retry-After', 'always');
    if (status === 409 && codes.includes('idempotency_conflict'))
      headers['Retry-After'] = headerUse('Retry-After', 'sometimes', 'Present while the first request is still running.');
    if (status === 503) headers['Retry-After'] = headerUse('Retry-After', 'always');
    if (status === 405) headers.Allow = headerUse('Allow', 'always');

    const examples: Json = {};
    for (const [name, { error }] of Object.entries(this.samples)) {
      if (codes.includes(error.code)) examples[name] = { $ref: `#/components/examples/${name}` };
    }
    return {
      description: `${ERROR_CATALOGUE[codes[0] as ErrorCode].title}${codes.length > 1 ? ' (one of several types)' : ''}. Problem types:\n${lines.join('\n')}`,
      headers,
      content: {
        'application/problem+json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Problem' },
              // The type's URL depends on where the server runs; its last segment, the code, does not: the
              // description names the codes (pattern and x-error-codes), so generated types fit every deployment.
              { properties: { type: { pattern: `/(${codes.join('|')})$`, 'x-error-codes': [...codes] }, status: { const: status } } },
            ],
          },
          examples,
        },
      },
    };
  }
}
