// The one catalogue of error types: code → HTTP status and English title. The `type` URL of
// a problem is `${errorsUrl}/<code>`; codes are stable (SPEC part 9), titles may change.
export const ERROR_CATALOGUE = {
  invalid_token: {
    status: 401,
    title: 'Invalid token',
    description: 'The Authorization header is missing or malformed, or the API key is unknown.',
    remedy: 'Send `Authorization: Bearer <API_KEY>` with a key issued by the provider.',
  },
  token_revoked: {
    status: 401,
    title: 'Token revoked',
    description: 'The API key was revoked.',
    remedy: 'Ask the provider for a new key.',
  },
  token_expired: {
    status: 401,
    title: 'Token expired',
    description: 'The API key is past its expiration date.',
    remedy: 'Ask the provider for a new key.',
  },
  insufficient_scope: {
    status: 403,
    title: 'Insufficient scope',
    description: 'The key lacks the scope this operation needs, or the plan allows reads only.',
    remedy: 'Ask the provider for a key with the scope named in `detail`, or a plan that allows writes.',
  },
  api_disabled: {
    status: 403,
    title: 'API disabled',
    description: 'The API is not enabled for this account.',
    remedy: 'Ask the provider to enable the API on the contract.',
  },
  module_not_enabled: {
    status: 403,
    title: 'Module not enabled',
    description: 'The module of this resource is not part of the account contract.',
    remedy: 'Ask the provider to enable the module named in `detail`.',
  },
  ip_not_allowed: {
    status: 403,
    title: 'IP not allowed',
    description: 'The key restricts the addresses it may be used from, and this request came from elsewhere.',
    remedy: 'Call from an allowed address, or ask the provider to change the list.',
  },
  bad_request: {
    status: 400,
    title: 'Bad request',
    description: 'The request could not be read as HTTP: a malformed percent-escape in the path, or a broken request line or header.',
    remedy: 'Percent-encode the path correctly (`%` followed by two hexadecimal digits) and send well-formed HTTP.',
  },
  not_found: {
    status: 404,
    title: 'Not found',
    description: 'The record or path does not exist, or belongs to another account.',
    remedy: 'Check the id and the path.',
  },
  method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    description: 'The path exists but does not accept this method.',
    remedy: 'Use one of the methods in the `Allow` header.',
  },
  idempotency_conflict: {
    status: 409,
    title: 'Idempotency conflict',
    description: 'The Idempotency-Key was already used with another method, path or body, or its first request is still running.',
    remedy: 'Use a new key for a new request; when the first request is still running, retry after `Retry-After`.',
  },
  external_id_conflict: {
    status: 409,
    title: 'External id conflict',
    description:
      'Another record of this resource already has the `external_id` the write would give (external ids are unique per account, mode and resource). Nothing was written; `existing_id` names that record.',
    remedy:
      'Update the record named in `existing_id` instead (`PUT /v1/<resource>/by-external-id/<external_id>` does it for you), or send another `external_id`.',
    message_pt: 'Outro registro deste recurso já tem este external_id; nada foi gravado. O registro existente está em existing_id.',
  },
  precondition_failed: {
    status: 412,
    title: 'Precondition failed',
    description:
      'The `If-Match` header names a version (ETag) of the record that is no longer current: someone changed it since you read it. Nothing was written.',
    remedy: 'Read the record again (GET), apply your change to what it holds now, and retry with its new `ETag` in `If-Match`.',
    message_pt:
      'O registro foi alterado desde a versão informada em If-Match; nada foi gravado. Leia o registro de novo e repita com o ETag atual.',
  },
  batch_aborted: {
    status: 424,
    title: 'Batch aborted',
    description: 'In an atomic batch, another operation failed, so this one was not written either (nothing of the batch was).',
    remedy: 'Correct the failed operations (they carry their own error) and send the whole batch again.',
    message_pt: 'Outra operação deste lote atômico falhou; por isso esta também não foi gravada (nada do lote foi).',
  },
  request_timeout: {
    status: 408,
    title: 'Request timeout',
    description: 'The request headers or body did not arrive in time (the server bounds both; see the operations guide).',
    remedy: 'Send the whole request promptly; retry on a new connection.',
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    description: 'The request body is over 1 MiB.',
    remedy: 'Send a smaller body.',
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    description: 'Write bodies must be `application/json`.',
    remedy: 'Send `Content-Type: application/json`.',
  },
  header_too_large: {
    status: 431,
    title: 'Request header fields too large',
    description: 'The request line and headers together exceed 16 KiB, or there are more than 100 header fields.',
    remedy: 'Send shorter URLs and fewer or smaller headers.',
  },
  validation: {
    status: 422,
    title: 'Validation failed',
    description: 'The body, a filter, the sort, the cursor or a header is outside the contract.',
    remedy: 'Read `detail` (query parameters) or `errors[]` (body fields) and correct the request.',
  },
  'rate-limit-exceeded': {
    status: 429,
    title: 'Rate limit exceeded',
    description: 'A rate window (per second, per minute or per day) is exhausted.',
    remedy: 'Wait the number of seconds in `Retry-After`, then retry.',
  },
  internal_error: {
    status: 500,
    title: 'Internal error',
    description: 'An unexpected failure on the server.',
    remedy: 'Retry later; quote `request_id` when contacting support.',
  },
  service_unavailable: {
    status: 503,
    title: 'Service unavailable',
    description: 'A dependency (the database) is unavailable.',
    remedy: 'Retry later with backoff.',
  },
} as const satisfies Record<string, { status: number; title: string; description: string; remedy: string; message_pt?: string }>;

/** The Portuguese (pt-BR) message of a type, for the types that have one. */
export const messagePt = (code: keyof typeof ERROR_CATALOGUE): string | undefined =>
  (ERROR_CATALOGUE[code] as { message_pt?: string }).message_pt;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
