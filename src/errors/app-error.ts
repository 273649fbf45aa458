// The error every layer throws. `detail` and `errors` are public; `cause` is for the log only.
import { ERROR_CATALOGUE, type ErrorCode } from './catalogue.ts';

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

export interface AppErrorOptions {
  detail?: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** Extension members of the problem (RFC 9457 3.2), declared in the problem schema: `existing_id`. */
  extensions?: Readonly<Record<string, string>>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string> | undefined;
  readonly extensions: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.detail ?? ERROR_CATALOGUE[code].title, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.detail = options.detail;
    this.errors = options.errors;
    this.headers = options.headers;
    this.extensions = options.extensions;
  }
}

/** Factories, so call sites read as what happened. */
export const errors = {
  invalidToken: (detail = 'The API key is missing, malformed or unknown.') => new AppError('invalid_token', { detail }),
  tokenRevoked: () => new AppError('token_revoked', { detail: 'This API key was revoked.' }),
  tokenExpired: () => new AppError('token_expired', { detail: 'This API key has expired.' }),
  ipNotAllowed: () => new AppError('ip_not_allowed', { detail: 'This API key may not be used from this address.' }),
  apiDisabled: () => new AppError('api_disabled', { detail: 'The API is not enabled for this account.' }),
  insufficientScope: (detail: string) => new AppError('insufficient_scope', { detail }),
  moduleNotEnabled: (module: string) =>
    new AppError('module_not_enabled', { detail: `The module ${module} is not enabled on this account's contract.` }),
  notFound: (detail = 'The requested resource does not exist.') => new AppError('not_found', { detail }),
  methodNotAllowed: (allow: string[]) =>
    new AppError('method_not_allowed', { detail: `Allowed methods: ${allow.join(', ')}.`, headers: { allow: allow.join(', ') } }),
  /** A refused query parameter: `detail` is the DECISIONS B.9 token naming it. */
  queryInvalid: (detail: string) => new AppError('validation', { detail }),
  bodyInvalid: (fieldErrors: FieldError[]) => new AppError('validation', { detail: 'The request body is invalid.', errors: fieldErrors }),
  idempotencyConflict: (detail: string, headers?: Record<string, string>) => new AppError('idempotency_conflict', { detail, headers }),
  preconditionFailed: () =>
    new AppError('precondition_failed', {
      detail: 'The record changed since the version named in If-Match; nothing was written. Read it again and retry with its current ETag.',
    }),
  batchAborted: () =>
    new AppError('batch_aborted', { detail: 'Another operation of this atomic batch failed, so this one was not written.' }),
  payloadTooLarge: () => new AppError('payload_too_large', { detail: 'The request body is over 1 MiB.' }),
  unsupportedMediaType: () => new AppError('unsupported_media_type', { detail: 'Write bodies must be sent as application/json.' }),
  badUrl: () => new AppError('bad_request', { detail: 'The request path has a malformed percent-escape.' }),
  badHttp: () => new AppError('bad_request', { detail: 'The request is not well-formed HTTP.' }),
  requestTimeout: () => new AppError('request_timeout', { detail: 'The request did not arrive in time.' }),
  headerTooLarge: (detail = 'The request line and headers exceed 16 KiB.') => new AppError('header_too_large', { detail }),
  internal: (cause?: unknown) => new AppError('internal_error', { cause }),
  serviceUnavailable: (cause?: unknown) =>
    new AppError('service_unavailable', { detail: 'A dependency is unavailable; retry later.', cause, headers: { 'retry-after': '1' } }),
};
