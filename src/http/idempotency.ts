// The Idempotency-Key stage of POST routes (SPEC part 8, DECISIONS B.12): preValidation claims the key
// (or replays / refuses); a write stores its response inside its own transaction (`finisher`); onSend
// stores any other response (a 422) or releases the key. Other methods never declare these hooks.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errors } from '../errors/app-error.ts';
import type { IdempotencyStore } from '../infra/idempotency-store.ts';
import type { Row } from '../infra/db/row.ts';
import type { Db } from '../infra/db/database.ts';
import type { Placeholder } from '../infra/db/deferred-statements.ts';
import { canonicalJson } from '../schemas/canonical-json.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAY_HEADER = 'idempotent-replay';
export const MAX_KEY_LENGTH = 255;

interface Claim {
  apiKeyId: string;
  key: string;
  token: string;
}

/** Hash of method, path (without query) and canonical body. */
export function requestSignature(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method}\n${path}\n${canonicalJson(body)}`)
    .digest('hex');
}

/** A key still in flight, a key used for another request, a key of the wrong size. */
const inProgress = () =>
  errors.idempotencyConflict('A request with this Idempotency-Key is still in progress; retry after it completes.', { 'retry-after': '1' });
const mismatch = () =>
  errors.idempotencyConflict(
    'This Idempotency-Key was already used with a different method, path or body; use a new key for a new request.',
  );
const badKey = () => new AppError('validation', { detail: `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} characters long.` });

// Statuses that say "this attempt did not happen": the key stays free for a retry.
const releases = (status: number) => status >= 500 || status === 409 || status === 429;

export interface IdempotencyHooks {
  claim(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  record(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>;
  /**
   * For the write engine: stores the response `respond` builds for the written record, inside the write's
   * transaction, when this request holds a claim.
   */
  finisher(request: FastifyRequest, status: number, respond: (record: Row) => string): StoreResponse | undefined;
  /** For writes whose response is built after their transaction (webhook endpoints): marks the claim committed
   *  inside the transaction, so it is never taken over; the response is stored when sent. */
  beforeCommit(request: FastifyRequest): ((trx: Db) => Promise<void>) | undefined;
}

/** An in-transaction finisher of the write engine (structurally: this layer does not import resources). */
type StoreResponse = (trx: Db, written: { record: Row; placeholders?: readonly Placeholder[] }) => Promise<void>;

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Headers a replay carries besides the stored body (a created record's ETag), from the stored status and body. */
export type ReplayHeaders = (status: number, body: string) => Record<string, string> | undefined;

export function createIdempotencyHooks(store: IdempotencyStore, replayHeaders?: ReplayHeaders): IdempotencyHooks {
  const claims = new WeakMap<FastifyRequest, Claim>();
  /** Requests whose response was stored with their write: onSend leaves a success alone. */
  const storedWithWrite = new WeakSet<FastifyRequest>();

  return {
    async claim(request, reply) {
      const header = request.headers[IDEMPOTENCY_HEADER];
      if (header === undefined) return;
      const key = Array.isArray(header) ? header.join(', ') : header;
      if (key.length < 1 || key.length > MAX_KEY_LENGTH) throw badKey();
      const apiKeyId = request.auth?.keyId;
      if (!apiKeyId) return;
      const path = request.url.split('?', 1)[0] as string;
      const result = await store.claim(apiKeyId, key, requestSignature(request.method, path, request.body));
      switch (result.kind) {
        case 'claimed':
          claims.set(request, { apiKeyId, key, token: result.token });
          return;
        case 'in_progress':
          throw inProgress();
        case 'mismatch':
          throw mismatch();
        case 'replay': {
          const contentType =
            result.contentType ?? (result.status >= 400 ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8');
          // Answered here: the handler never runs, the stored body goes out unchanged. A replay
          // is the original response, so it carries the original request id in the header too
          // (the body's `request_id` must equal `X-Request-Id`, and it names the request that did the work).
          const originalId = storedRequestId(result.body);
          if (originalId) reply.header('x-request-id', originalId);
          const extra = replayHeaders?.(result.status, result.body);
          if (extra) reply.headers(extra);
          return reply.code(result.status).header(REPLAY_HEADER, 'true').header('content-type', contentType).send(result.body);
        }
      }
    },

    async record(request, reply, payload) {
      const claim = claims.get(request);
      if (!claim) return payload;
      claims.delete(request);
      const status = reply.statusCode;
      if (storedWithWrite.has(request) && !releases(status)) return payload;
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
      try {
        if (releases(status) || body === null) await store.release(claim.apiKeyId, claim.key, claim.token);
        else await store.complete(claim.apiKeyId, claim.key, claim.token, status, body, stringHeader(reply.getHeader('content-type')));
      } catch (err) {
        // The response is already decided; a claim left in progress is taken over once stale.
        request.log.error({ err }, 'idempotency record failed');
      }
      return payload;
    },

    beforeCommit(request) {
      const claim = claims.get(request);
      if (!claim) return undefined;
      return async (trx: Db) => {
        // Taken over while this request stalled: the other attempt owns the key, this one must not write.
        if (!(await store.markCommitted(trx, claim.apiKeyId, claim.key, claim.token))) throw inProgress();
      };
    },

    finisher(request, status, respond) {
      const claim = claims.get(request);
      if (!claim) return undefined;
      return async (trx, written) => {
        const body = respond(written.record);
        // Taken over while this request stalled: the other attempt owns the key, this one must not write.
        await store.completeInTransaction(trx, claim, { status, body, contentType: JSON_CONTENT_TYPE }, written.placeholders, inProgress);
        storedWithWrite.add(request);
      };
    },
  };
}

/** The request id inside a stored envelope (`meta.request_id`) or problem (`request_id`). */
function storedRequestId(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { meta?: { request_id?: unknown }; request_id?: unknown };
    const id = parsed.meta?.request_id ?? parsed.request_id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

const stringHeader = (value: unknown): string | null =>
  value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value);
