// With read replicas: a write request's commit position is noted for its key before the answer leaves, so
// the key's next read, on any instance, waits for no replica and sees no older state (read-router.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type CommitLsnScope, runInCommitScope } from '../infra/db/commit-lsn.ts';
import type { ReadRouter } from '../infra/db/read-router.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function registerReadYourWrites(app: FastifyInstance, reads: ReadRouter): void {
  const scopes = new WeakMap<FastifyRequest, CommitLsnScope>();
  // Callback style, and nothing at all for reads: the hot path stays as it was.
  app.addHook('onRequest', (request, _reply, done) => {
    if (READS.has(request.method)) return done();
    const scope: CommitLsnScope = { lsn: 0 };
    scopes.set(request, scope);
    // The rest of the request (its hooks, its handler) runs in the scope, so the driver finds it at COMMIT.
    runInCommitScope(scope, () => done());
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    const scope = scopes.get(request);
    const keyId = request.auth?.keyId;
    if (!scope || scope.lsn === 0 || !keyId) return done(null, payload);
    reads.noteWrite(keyId, scope.lsn).then(
      () => done(null, payload),
      () => done(null, payload),
    );
  });
}
