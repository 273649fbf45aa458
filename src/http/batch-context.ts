// What an operation of POST /v1/batch carries into the pipeline (src/resources/engines/batch.ts): each operation
// is served as the single request would be, through the app itself (scopes, modules, plan, validation,
// the tenant wall, events, the write log), with the batch's key already authenticated and charged, and,
// in an atomic batch, the batch's transaction to write in. The header only names a live in-process
// context by an unguessable token: a client sending it reaches nothing.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuthContext } from '../domain/tenant.ts';
import type { WriteTransaction } from '../infra/db/statements/write-transaction.ts';

export const BATCH_OPERATION_HEADER = 'x-balcao-batch-operation';

export interface BatchOperationContext {
  /** The batch's key, authenticated (and charged) once for the whole batch. */
  auth: AuthContext;
  /** An atomic batch's transaction: the operation writes in it and the batch commits or rolls back. */
  tx?: WriteTransaction;
  /** With `tx`: takes an operation's work for after the batch commits (the NOTIFY of its event). */
  afterCommit?: (work: () => void) => void;
  /** The batch's Idempotency-Key, for the write log. */
  idempotencyKey: string | null;
}

const live = new Map<string, BatchOperationContext>();

/** Makes a context live for one operation; the returned token goes in BATCH_OPERATION_HEADER. */
export function enterOperation(context: BatchOperationContext): string {
  const token = randomUUID();
  live.set(token, context);
  return token;
}

export function leaveOperation(token: string): void {
  live.delete(token);
}

/** The batch context of an operation's request, if it is one. */
export function batchOperationOf(request: FastifyRequest): BatchOperationContext | undefined {
  const token = request.headers[BATCH_OPERATION_HEADER];
  return typeof token === 'string' ? live.get(token) : undefined;
}
