// Whether a write's event fans out to webhook endpoints. The fan-out is an INSERT of deliveries from the
// account's enabled endpoints, in the event's statement; with no endpoint it writes nothing, yet its set-up and
// locks cost PostgreSQL about a tenth of a sale's extra work over a bare insert (docs/performance.md).
// The tenant's events counter row, which every event's statement locks and moves on, carries `has_endpoints`:
// true while the tenant may have an enabled endpoint (src/webhooks/endpoint-repository.ts keeps it). Each process
// remembers the tenants whose last event found it false, and leaves their next events' fan-out out. Such a
// statement checks the flag instead, under the same lock: when an endpoint appeared meanwhile (created by any
// instance), it fails, nothing of the write commits, and the write runs again with the fan-out.
import { AccountBeliefs } from '../resources/account-beliefs.ts';

export class FanOutMemory {
  /** Accounts whose last event found no enabled endpoint. */
  private readonly withoutEndpoints = new AccountBeliefs('the account has a webhook endpoint now');

  /** Whether an event of `tenantKey` must fan out: unless its last event found no endpoint, and the write may
   *  run again should one have appeared. */
  fansOut(tenantKey: string, mayAssume: boolean): boolean {
    return !mayAssume || !this.withoutEndpoints.holds(tenantKey);
  }

  /** What an event's statement found on the tenant's counter row. */
  learn(tenantKey: string, hasEndpoints: boolean): void {
    if (hasEndpoints) this.withoutEndpoints.drop(tenantKey);
    else this.withoutEndpoints.hold(tenantKey);
  }

  /** What a failure of a statement without fan-out means: an endpoint appeared, and the write runs again. */
  meaning(tenantKey: string): (err: unknown) => unknown {
    return this.withoutEndpoints.meaning(tenantKey);
  }
}
