// Whether a write's event fans out to webhook endpoints. The fan-out is an INSERT of deliveries from the
// account's enabled endpoints, in the event's statement; with no endpoint it writes nothing, yet its set-up and
// locks cost PostgreSQL about a tenth of a sale's extra work over a bare insert (docs/performance.md).
// The tenant's events counter row, which every event's statement locks and moves on, carries `has_endpoints`:
// true while the tenant may have an enabled endpoint (src/webhooks/endpoint-repository.ts keeps it). Each process
// remembers the tenants whose last event found it false, and leaves their next events' fan-out out. Such a
// statement checks the flag instead, under the same lock: when an endpoint appeared meanwhile (created by any
// instance), it fails, nothing of the write commits, and the write runs again with the fan-out.
import { sqlState } from '../errors/database-errors.ts';
import { WriteMustRunAgain } from '../resources/write-engine.ts';

/** Tenants remembered at most; past it the memory starts over (a forgotten tenant fans out, and is learned again). */
const MAX_REMEMBERED = 100_000;

/** SQLSTATE 22012: the check of a statement without fan-out found the flag set. */
const isEndpointFound = (err: unknown): boolean => sqlState(err) === '22012';

export class FanOutMemory {
  private readonly withoutEndpoints = new Set<string>();

  /** Whether an event of `tenantKey` must fan out: unless its last event found no endpoint, and the write may
   *  run again should one have appeared. */
  fansOut(tenantKey: string, mayAssume: boolean): boolean {
    return !mayAssume || !this.withoutEndpoints.has(tenantKey);
  }

  /** What an event's statement found on the tenant's counter row. */
  learn(tenantKey: string, hasEndpoints: boolean): void {
    if (hasEndpoints) this.withoutEndpoints.delete(tenantKey);
    else {
      if (this.withoutEndpoints.size >= MAX_REMEMBERED) this.withoutEndpoints.clear();
      this.withoutEndpoints.add(tenantKey);
    }
  }

  /** What a failure of a statement without fan-out means: an endpoint appeared, and the write runs again. */
  meaning(tenantKey: string): (err: unknown) => unknown {
    return (err) => {
      if (!isEndpointFound(err)) return err;
      this.learn(tenantKey, true);
      return new WriteMustRunAgain('the account has a webhook endpoint now');
    };
  }
}
