// A write request's commit position (PostgreSQL's WAL position after its COMMIT) is noted before the answer
// leaves: for the change feed, so the tenant's next read of it waits until capture has made that write's
// events (events/capture); with read replicas, so the key's next read, on any instance, waits for no replica and
// sees no older state (read-router.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { tenantKey } from '../domain/tenant.ts';
import type { CommitPosition } from '../infra/db/statements/commit-lsn.ts';
import type { ReadRouter } from '../infra/db/replicas/read-router.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface CommitPositionNotes {
  reads?: ReadRouter | undefined;
  /** The tenant (`account:mode`) committed a write at `position`. */
  written?: (tenantKey: string, position: number) => void;
}

/** Where a write request's transactions note their commit positions (write-transaction.ts `commitPosition`). */
const positions = new WeakMap<FastifyRequest, CommitPosition>();

/** The request's commit position, when it is a write request whose commits are tracked. */
export const commitPositionOf = (request: FastifyRequest): CommitPosition | undefined => positions.get(request);

export function registerReadYourWrites(app: FastifyInstance, notes: CommitPositionNotes): void {
  const scopes = positions;
  // Callback style, and nothing at all for reads: the hot path stays as it was.
  app.addHook('onRequest', (request, _reply, done) => {
    if (READS.has(request.method)) return done();
    scopes.set(request, { lsn: 0 });
    done();
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    const scope = scopes.get(request);
    if (!scope || scope.lsn === 0) return done(null, payload);
    const tenant = request.tenant;
    if (tenant) notes.written?.(tenantKey(tenant), scope.lsn);
    const keyId = request.auth?.keyId;
    if (!notes.reads || !keyId) return done(null, payload);
    notes.reads.noteWrite(keyId, scope.lsn).then(
      () => done(null, payload),
      () => done(null, payload),
    );
  });
}
