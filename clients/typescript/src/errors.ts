// One error class for every failure the API answers: the problem's `type` (a URL ending in its code), `status`,
// `detail`, the field errors of a refused body and the request id to quote to support.
import type { components } from './generated/balcao-api.js';

export type Problem = components['schemas']['Problem'];
export type FieldError = components['schemas']['FieldError'];

export class BalcaoError extends Error {
  override readonly name = 'BalcaoError';
  /** The problem type URL, `<errors address>/<code>`. */
  readonly type: string;
  /** The last segment of `type`: `validation`, `not_found`, `rate-limit-exceeded`, … Decide by it. */
  readonly code: string;
  readonly status: number;
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: FieldError[];
  readonly requestId: string | undefined;
  /** With `external_id_conflict`: the record that already has the external id. */
  readonly existingId: string | undefined;

  constructor(problem: Problem, status: number) {
    super(`${status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`);
    this.type = problem.type;
    this.code = problem.type.slice(problem.type.lastIndexOf('/') + 1);
    this.status = status;
    this.title = problem.title;
    this.detail = problem.detail ?? undefined;
    this.errors = problem.errors ?? [];
    this.requestId = problem.request_id;
    this.existingId = problem.existing_id ?? undefined;
  }
}

/** An answer that is not a problem document (a proxy's error page): still one BalcaoError. */
export function problemOf(status: number, body: unknown, requestId: string | null): Problem {
  if (body && typeof body === 'object' && typeof (body as Problem).type === 'string') return body as Problem;
  return { type: `about:blank/http_${status}`, title: `HTTP ${status}`, status, request_id: requestId ?? '' } as Problem;
}
