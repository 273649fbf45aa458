// The Idempotency-Key stage of POST routes (SPEC part 8, DECISIONS B.12). A creation of the write engine
// records its key with its response in its own transaction (`readKey`, then `createOnce`): one commit per write.
// It does so one way: a part of the write's tail (`KeyInWrite.beside`), which records a new key, or stores the
// response under a claim taken before. Other POSTs claim it in preValidation (`claim`: or replay / refuse); onSend
// stores any other response (a 422) or releases the key. Other methods never declare these hooks.
import { hash, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errors } from '../errors/app-error.ts';
import {
  type ClaimResult,
  type IdempotencyStore,
  type KeyClaim,
  KeyRecordedError,
  keyRecordedMeaning,
  takenOverMeaning,
} from '../infra/idempotency-store.ts';
import type { Row } from '../infra/db/engine/row.ts';
import type { Db } from '../infra/db/engine/database.ts';
import type { FailureMeaning, Placeholder } from '../infra/db/statements/send-ahead.ts';
import type { SqlShape } from '../infra/db/statements/sql-shape.ts';
import { canonicalJson } from '../schemas/canonical-json.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAY_HEADER = 'idempotent-replay';
export const MAX_KEY_LENGTH = 255;

/** A request's Idempotency-Key, its caller and the signature of what it asks. */
interface KeyRead {
  apiKeyId: string;
  key: string;
  signature: string;
}

/** A key read from the request, to be recorded by the write's own transaction. */
type PendingClaim = KeyRead & KeyClaim;

/** What a creation writes in its transaction for its key, as a part of its tail: the key recorded with the response,
 *  or the response stored under a claim taken before; nothing without a key. */
export interface KeyInWrite {
  beside?: RecordBeside;
}

/** The key's part of the write's tail (structurally the write engine's `WrittenBeside`). */
type RecordBeside = (written: { record?: Row; object?: Row; placeholders?: readonly Placeholder[] }) => {
  shape: SqlShape;
  meaning: FailureMeaning;
  checked?: boolean;
};

/** Hash of method, path (without query) and canonical body. */
export function requestSignature(method: string, path: string, body: unknown): string {
  return hash('sha256', `${method}\n${path}\n${canonicalJson(body)}`, 'hex');
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
  /** preValidation of a creation that records its key in its own transaction (`createOnce`): reads the key only. */
  readKey(request: FastifyRequest): Promise<void>;
  /**
   * Runs `create` with its key recorded in its transaction. When the key is already recorded, or the creation
   * is refused (a 4xx a replay must repeat), the key is settled on its own (`claim`): a replay is sent
   * (undefined is returned), a conflict thrown, or the key taken: the creation then runs again under it, or
   * its refusal is thrown and stored by onSend.
   */
  createOnce<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    respond: (record: Row) => string,
    create: (key: KeyInWrite) => Promise<T>,
  ): Promise<T | undefined>;
  record(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>;
  /** For writes whose response is built after their transaction (webhook endpoints): marks the claim committed
   *  inside the transaction, so it is never taken over; the response is stored when sent. */
  beforeCommit(request: FastifyRequest): ((trx: Db) => Promise<void>) | undefined;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Headers a replay carries besides the stored body (a created record's ETag), from the stored status and body. */
export type ReplayHeaders = (status: number, body: string) => Record<string, string> | undefined;

/** What the hooks of one route family share: the store, and the keys of the requests in flight. */
interface HookState {
  store: IdempotencyStore;
  replayHeaders: ReplayHeaders | undefined;
  /** Keys claimed on their own, by request. */
  claims: WeakMap<FastifyRequest, KeyClaim>;
  /** Keys read by `readKey`, recorded by the creation's transaction. */
  pending: WeakMap<FastifyRequest, PendingClaim>;
  /** Requests whose response was stored with their write: onSend leaves a success alone. */
  storedWithWrite: WeakSet<FastifyRequest>;
}

export function createIdempotencyHooks(store: IdempotencyStore, replayHeaders?: ReplayHeaders): IdempotencyHooks {
  const state: HookState = { store, replayHeaders, claims: new WeakMap(), pending: new WeakMap(), storedWithWrite: new WeakSet() };
  return {
    async claim(request, reply) {
      const read = keyOf(request);
      // A replay is answered here: the handler never runs.
      if (read && (await settle(state, request, reply, read))) return reply;
    },
    async readKey(request) {
      const read = keyOf(request);
      if (!read) return;
      state.pending.set(request, { ...read, token: randomUUID() });
      await store.purgeIfDue();
    },
    createOnce: (request, reply, status, respond, create) => createOnce(state, request, reply, status, respond, create),
    record: (request, reply, payload) => record(state, request, reply, payload),
    beforeCommit(request) {
      const claim = state.claims.get(request);
      if (!claim) return undefined;
      return async (trx: Db) => {
        // Taken over while this request stalled: the other attempt owns the key, this one must not write.
        if (!(await store.markCommitted(trx, claim.apiKeyId, claim.key, claim.token))) throw inProgress();
      };
    },
  };
}

/** Stores the response of a request holding a claim of its own; nothing without one. */
function heldKey(state: HookState, request: FastifyRequest, status: number, respond: (record: Row) => string): KeyInWrite {
  const claim = state.claims.get(request);
  return claim ? { beside: storeResponse(state, request, claim, status, respond) } : {};
}

/** See `IdempotencyHooks.createOnce`. */
async function createOnce<T>(
  state: HookState,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  respond: (record: Row) => string,
  create: (key: KeyInWrite) => Promise<T>,
): Promise<T | undefined> {
  const claim = state.pending.get(request);
  if (!claim) return create(heldKey(state, request, status, respond));
  state.pending.delete(request);
  try {
    return await create(recordWithResponse(state, request, claim, status, respond));
  } catch (err) {
    const recorded = err instanceof KeyRecordedError;
    if (!recorded && !(err instanceof AppError && !releases(err.status))) throw err;
    if (await settle(state, request, reply, claim)) return undefined;
    if (!recorded) throw err;
    return create(heldKey(state, request, status, respond));
  }
}

/** onSend: stores the response of a request holding a claim of its own, or frees the key when it failed. */
async function record(state: HookState, request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  const claim = state.claims.get(request);
  if (!claim) return payload;
  state.claims.delete(request);
  const status = reply.statusCode;
  if (state.storedWithWrite.has(request) && !releases(status)) return payload;
  const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
  try {
    if (releases(status) || body === null) await state.store.release(claim.apiKeyId, claim.key, claim.token);
    else await state.store.complete(claim.apiKeyId, claim.key, claim.token, status, body, stringHeader(reply.getHeader('content-type')));
  } catch (err) {
    // The response is already decided; a claim left in progress is taken over once stale.
    request.log.error({ err }, 'idempotency record failed');
  }
  return payload;
}

/** The record a keyed write answers: every write that takes a key (POST, PUT) answers one. */
function answeredRecord(written: { record?: Row; object?: Row }): Row {
  const record = written.record ?? written.object;
  if (!record) throw errors.internal(new Error('an Idempotency-Key for a write that answers no record'));
  return record;
}

/** Records a new key with the write's response, in the write's tail. A key already recorded fails the statement. */
function recordWithResponse(
  state: HookState,
  request: FastifyRequest,
  claim: PendingClaim,
  status: number,
  respond: (record: Row) => string,
): KeyInWrite {
  return {
    beside(written) {
      state.storedWithWrite.add(request);
      const response = { status, body: respond(answeredRecord(written)), contentType: JSON_CONTENT_TYPE };
      return {
        shape: state.store.recordShape(claim, claim.signature, response, written.placeholders),
        meaning: keyRecordedMeaning,
      };
    },
  };
}

/** Stores the response under the request's claim, in the write's tail: a claim taken over meanwhile (the other
 *  attempt owns the key) fails the write. */
function storeResponse(
  state: HookState,
  request: FastifyRequest,
  claim: KeyClaim,
  status: number,
  respond: (record: Row) => string,
): RecordBeside {
  return (written) => {
    state.storedWithWrite.add(request);
    const response = { status, body: respond(answeredRecord(written)), contentType: JSON_CONTENT_TYPE };
    return {
      shape: state.store.completeShape(claim, response, written.placeholders),
      meaning: takenOverMeaning(inProgress),
      checked: true,
    };
  };
}

/** Claims the key on its own: true when a replay was sent; a conflict is thrown; a claim taken is kept for the request. */
async function settle(
  state: HookState,
  request: FastifyRequest,
  reply: FastifyReply,
  { apiKeyId, key, signature }: KeyRead,
): Promise<boolean> {
  const result = await state.store.claim(apiKeyId, key, signature);
  switch (result.kind) {
    case 'claimed':
      state.claims.set(request, { apiKeyId, key, token: result.token });
      return false;
    case 'in_progress':
      throw inProgress();
    case 'mismatch':
      throw mismatch();
    case 'replay':
      sendReplay(state, reply, result);
      return true;
  }
}

/** The stored response, unchanged. A replay is the original response, so it carries the original request id in the
 *  header too (the body's `request_id` must equal `X-Request-Id`, and it names the request that did the work). */
function sendReplay(state: HookState, reply: FastifyReply, stored: Extract<ClaimResult, { kind: 'replay' }>): void {
  const contentType =
    stored.contentType ?? (stored.status >= 400 ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8');
  const originalId = storedRequestId(stored.body);
  if (originalId) reply.header('x-request-id', originalId);
  const extra = state.replayHeaders?.(stored.status, stored.body);
  if (extra) reply.headers(extra);
  reply.code(stored.status).header(REPLAY_HEADER, 'true').header('content-type', contentType).send(stored.body);
}

/** The request's Idempotency-Key, its caller and its signature; undefined without a key; 422 for a key of the wrong size. */
function keyOf(request: FastifyRequest): KeyRead | undefined {
  const header = request.headers[IDEMPOTENCY_HEADER];
  if (header === undefined) return undefined;
  const key = Array.isArray(header) ? header.join(', ') : header;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH) throw badKey();
  const apiKeyId = request.auth?.keyId;
  if (!apiKeyId) return undefined;
  const path = request.url.split('?', 1)[0] as string;
  return { apiKeyId, key, signature: requestSignature(request.method, path, request.body) };
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
