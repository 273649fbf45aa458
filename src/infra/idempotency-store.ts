// Durable Idempotency-Key records (SPEC part 8, DECISIONS B.12) in the `idempotency_keys` table,
// so every instance sees them. A key is claimed atomically (one INSERT … ON CONFLICT), completed
// with the response, or released when the request failed; expired records count as absent.
// A creation of the write engine records its key with its response in its own transaction, as a part of
// the write's tail (`recordShape`): the write and its key commit together, one commit and one row per
// write. Other POSTs claim first (`claim`).
// Crash safety: a write's response is stored in the write's own transaction (`recordShape`, `completeShape`),
// so a committed write always replays. A claim made on its own is a lease: if its request never commits
// (the process died), a retry takes the key over after `staleSeconds` (5 s).
import { randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { hasSqlState, violatedConstraint } from '../errors/database-errors.ts';
import { SQLSTATE } from '../errors/sqlstate.ts';
import { beliefFailed } from './db/statements/belief-check.ts';
import type { Db } from './db/engine/database.ts';
import { type Placeholder, settledTextShape } from './db/statements/send-ahead.ts';
import { composedShape, plainValues, type SqlShape } from './db/statements/sql-shape.ts';

/** A unique violation (23505) of the key's primary key: the key is recorded, or was by a transaction that committed
 *  while this insert waited for it. */
const isKeyRecorded = (err: unknown): boolean =>
  hasSqlState(err, SQLSTATE.uniqueViolation) && violatedConstraint(err).startsWith('idempotency_keys_pkey');

/** The key is already recorded (or was, by a transaction that committed while this claim waited for it). */
export class KeyRecordedError extends Error {
  constructor() {
    super('the Idempotency-Key is already recorded');
  }
}

/** What the failure of a statement that records a key means: `KeyRecordedError` when the key's unique index refused it. */
export const keyRecordedMeaning = (err: unknown): unknown => (isKeyRecorded(err) ? new KeyRecordedError() : err);

/** A key and the token that will hold it. */
export interface KeyClaim {
  apiKeyId: string;
  key: string;
  token: string;
}

export type ClaimResult =
  | { kind: 'claimed'; token: string }
  | { kind: 'replay'; status: number; body: string; contentType: string | null }
  /** The key was used with another method, path or body. */
  | { kind: 'mismatch' }
  /** The first request with this key is still running. */
  | { kind: 'in_progress' };

export interface IdempotencyStoreOptions {
  /** How long a key is remembered (SPEC: 24 hours). */
  ttlSeconds?: number;
  /** After this long, a claim whose request never committed its write is taken over (its
   *  process died); a committed one is never run again. */
  staleSeconds?: number;
  /** Expired records are deleted at most this often, on the way of a claim. */
  purgeEverySeconds?: number;
}

interface StoredRow {
  signature: string;
  state: 'in_progress' | 'done';
  response_status: number | null;
  response_body: string | null;
  response_content_type: string | null;
}

/**
 * The statement that stores a response in the claim's row, when `claim.token` still holds it: answers the
 * row's `signature` when it stored it, no row when the claim was taken over. The row is found through the key's unique index
 * (the ON CONFLICT arbiter), never by the planner: an UPDATE … WHERE on the key was planned as a scan of the
 * whole table by connections that prepared it while the table looked empty (a VACUUM of an emptied table),
 * and they kept that plan as the table grew (docs/performance.md). The claim's row exists (a request stores
 * only under its own claim), so the conflict path runs; should its own row ever be inserted instead, it is
 * already expired (free for the next request with the key) and answers an empty signature.
 */
function storeInClaimedRow(
  claim: KeyClaim,
  response: { status: number; body: string | RawBuilder<string>; contentType: string | null },
  committed = true,
): RawBuilder<{ signature: string }> {
  // INSERT … SELECT and EXCLUDED, not VALUES and the values in SET: the body's placeholders are settled by a
  // sub-select of the account's tables, which Citus refuses in an INSERT's VALUES or SET.
  return sql`
    INSERT INTO idempotency_keys AS k
      (api_key_id, idempotency_key, signature, state, claim_token, committed, created_at, expires_at,
       response_status, response_body, response_content_type)
    SELECT cast(${claim.apiKeyId} as uuid), cast(${claim.key} as text), '', 'done', cast(${claim.token} as uuid), false, now(), now(),
      cast(${response.status} as integer), cast(${response.body} as text), cast(${response.contentType} as text)
    ON CONFLICT (api_key_id, idempotency_key) DO UPDATE
    SET ${committed ? sql`committed = true, ` : sql``}state = 'done', response_status = excluded.response_status,
        response_body = excluded.response_body, response_content_type = excluded.response_content_type
    WHERE k.claim_token = excluded.claim_token
    RETURNING k.signature`;
}

// INSERT … SELECT, not VALUES: the body's placeholders are settled by a sub-select of the account's tables,
// which Citus refuses in an INSERT's VALUES.
/** `storeInClaimedRow` as a checked part of a tail: each row answers whether it is the claim's (`held`). */
const completeSql = ([, body]: RawBuilder<unknown>[], [scalars]: (readonly unknown[])[]) => {
  const [apiKeyId, key, token, status, contentType] = scalars ?? [];
  return sql`
    INSERT INTO idempotency_keys AS k
      (api_key_id, idempotency_key, signature, state, claim_token, committed, created_at, expires_at,
       response_status, response_body, response_content_type)
    SELECT cast(${apiKeyId} as uuid), cast(${key} as text), '', 'done', cast(${token} as uuid), false, now(), now(),
      cast(${status} as integer), cast(${body} as text), cast(${contentType} as text)
    ON CONFLICT (api_key_id, idempotency_key) DO UPDATE
    SET committed = true, state = 'done', response_status = excluded.response_status,
        response_body = excluded.response_body, response_content_type = excluded.response_content_type
    WHERE k.claim_token = excluded.claim_token
    RETURNING k.signature <> '' AS held`;
};

/** What a failure of a tail carrying `completeShape` means: the claim was taken over (`takenOver`), or itself. */
export const takenOverMeaning =
  (takenOver: () => Error) =>
  (err: unknown): unknown =>
    beliefFailed(err) ? takenOver() : err;

const recordSql = ([, body]: RawBuilder<unknown>[], [scalars]: (readonly unknown[])[]) => {
  const [apiKeyId, key, signature, token, ttlSeconds, status, contentType] = scalars ?? [];
  return sql`
      INSERT INTO idempotency_keys
        (api_key_id, idempotency_key, signature, state, claim_token, committed, created_at, expires_at,
         response_status, response_body, response_content_type)
      SELECT cast(${apiKeyId} as uuid), cast(${key} as text), cast(${signature} as text), 'done',
        cast(${token} as uuid), true, now(), now() + make_interval(secs => ${ttlSeconds}),
        cast(${status} as integer), cast(${body} as text), cast(${contentType} as text)`;
};

export class IdempotencyStore {
  readonly ttlSeconds: number;
  readonly staleSeconds: number;
  readonly purgeEverySeconds: number;
  private nextPurge = 0;

  constructor(
    private readonly db: Db,
    options: IdempotencyStoreOptions = {},
  ) {
    this.ttlSeconds = options.ttlSeconds ?? 24 * 60 * 60;
    this.staleSeconds = options.staleSeconds ?? 5;
    this.purgeEverySeconds = options.purgeEverySeconds ?? 10 * 60;
  }

  /** Takes the key for this request, or says why not. Never lets two requests hold one key. */
  async claim(apiKeyId: string, key: string, signature: string): Promise<ClaimResult> {
    await this.purgeIfDue();
    // A record deleted between the statements (its request failed) is retried. The common case, a
    // new key, is the first statement alone. Taking over an expired or stale record is an UPDATE
    // whose conditions are checked again under the row's lock, so two retries never both take it:
    // not an ON CONFLICT … WHERE, whose now() Citus refuses (it wants IMMUTABLE functions there).
    for (let attempt = 0; attempt < 5; attempt++) {
      const token = randomUUID();
      const inserted = await sql<{ claim_token: string }>`
        INSERT INTO idempotency_keys
          (api_key_id, idempotency_key, signature, state, claim_token, committed, created_at, expires_at)
        VALUES (${apiKeyId}, ${key}, ${signature}, 'in_progress', ${token}, false, now(), now() + make_interval(secs => ${this.ttlSeconds}))
        ON CONFLICT (api_key_id, idempotency_key) DO NOTHING
        RETURNING claim_token`.execute(this.db);
      if (inserted.rows.length > 0) return { kind: 'claimed', token };

      const existing = await sql<StoredRow & { free: boolean }>`
        SELECT signature, state, response_status, response_body, response_content_type,
               (expires_at <= now() OR (state = 'in_progress' AND NOT committed AND created_at < now() - make_interval(secs => ${this.staleSeconds}))) AS free
        FROM idempotency_keys
        WHERE api_key_id = ${apiKeyId} AND idempotency_key = ${key}`.execute(this.db);
      const row = existing.rows[0];
      if (!row) continue;
      if (row.free) {
        const taken = await sql<{ claim_token: string }>`
          UPDATE idempotency_keys SET
            signature = ${signature}, state = 'in_progress', claim_token = ${token}, committed = false,
            response_status = NULL, response_body = NULL, response_content_type = NULL,
            created_at = now(), expires_at = now() + make_interval(secs => ${this.ttlSeconds})
          WHERE api_key_id = ${apiKeyId} AND idempotency_key = ${key}
            AND (expires_at <= now() OR (state = 'in_progress' AND NOT committed AND created_at < now() - make_interval(secs => ${this.staleSeconds})))
          RETURNING claim_token`.execute(this.db);
        if (taken.rows.length > 0) return { kind: 'claimed', token };
        continue;
      }
      if (row.signature !== signature) return { kind: 'mismatch' };
      if (row.state === 'in_progress' || row.response_status === null) return { kind: 'in_progress' };
      return { kind: 'replay', status: row.response_status, body: row.response_body ?? '', contentType: row.response_content_type };
    }
    return { kind: 'in_progress' };
  }

  /**
   * Records a new key with the write's response, as a CTE of the write's tail (write-engine.ts), sent with the
   * commit: one row written once per keyed write. A record of the key, or one a concurrent transaction holds (the
   * insert waits for it to end), fails the statement on the key's unique index, and with it the transaction, with
   * `KeyRecordedError` (`keyRecordedMeaning`): the caller then rolls back and settles the key with `claim` (a replay,
   * a conflict, or an expired record taken over). A concurrent duplicate therefore runs its write too, and rolls it
   * back when it reaches the key; its rows, its number and its event never commit (docs/decisions.md). A plain INSERT, not
   * ON CONFLICT DO NOTHING with a check of its row count: a speculative insertion and the check cost
   * PostgreSQL 34 µs more per sale (docs/performance.md).
   */
  recordShape(
    claim: KeyClaim,
    signature: string,
    response: { status: number; body: string; contentType: string },
    placeholders: readonly Placeholder[] | undefined,
  ): SqlShape {
    const values = plainValues(claim.apiKeyId, claim.key, signature, claim.token, this.ttlSeconds, response.status, response.contentType);
    return composedShape('key record', [values, settledTextShape(response.body, placeholders)], recordSql);
  }

  /**
   * Called inside the write's transaction: from its commit on, the claim can no longer be taken
   * over. Returns false when it already was (this request then must not write).
   */
  async markCommitted(trx: Db, apiKeyId: string, key: string, token: string): Promise<boolean> {
    const result = await sql`
      UPDATE idempotency_keys SET committed = true
      WHERE api_key_id = ${apiKeyId} AND idempotency_key = ${key} AND claim_token = ${token}`.execute(trx);
    return Number(result.numAffectedRows ?? 0) > 0;
  }

  /**
   * Stores the response under a claim taken before, as a CTE of the write's tail (write-engine.ts): it commits with
   * the write or not at all. The part is `checked`: when the claim was taken over meanwhile (or the row is gone),
   * no row holds and the statement fails on a division by zero, which `takenOverMeaning` names.
   */
  completeShape(
    claim: KeyClaim,
    response: { status: number; body: string; contentType: string },
    placeholders: readonly Placeholder[] | undefined,
  ): SqlShape {
    const values = plainValues(claim.apiKeyId, claim.key, claim.token, response.status, response.contentType);
    return composedShape('key completion', [values, settledTextShape(response.body, placeholders)], completeSql);
  }

  /** Stores the response of the claiming request for replays. */
  async complete(apiKeyId: string, key: string, token: string, status: number, body: string, contentType: string | null): Promise<void> {
    await storeInClaimedRow({ apiKeyId, key, token }, { status, body, contentType }, false).execute(this.db);
  }

  /** Frees the key after a failure, so a retry runs anew. */
  async release(apiKeyId: string, key: string, token: string): Promise<void> {
    await sql`
      DELETE FROM idempotency_keys
      WHERE api_key_id = ${apiKeyId} AND idempotency_key = ${key} AND claim_token = ${token}`.execute(this.db);
  }

  /** Deletes every expired record; returns how many. */
  async purgeExpired(): Promise<number> {
    const result = await sql`DELETE FROM idempotency_keys WHERE expires_at <= now()`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  /** Deletes the expired records when the last purge is `purgeEverySeconds` old. */
  async purgeIfDue(): Promise<void> {
    const now = Date.now();
    if (now < this.nextPurge) return;
    this.nextPurge = now + this.purgeEverySeconds * 1000;
    await this.purgeExpired();
  }
}
