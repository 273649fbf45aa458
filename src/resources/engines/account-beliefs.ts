// What a process believes of accounts to spare a write some work (a sale counter seen: no rare paths), checked
// by the write's own statement. A statement that relied on a belief fails when its check finds it wrong
// (infra/db/statements/belief-check.ts): nothing of the write commits, the belief is dropped, and the engine runs the write
// again taking nothing for granted (`WriteMustRunAgain`).
import { beliefFailed } from '../../infra/db/statements/belief-check.ts';
import { WriteMustRunAgain } from './write-engine.ts';

/** Accounts remembered at most; past it the memory starts over (a forgotten account only costs a full write). */
const MAX_REMEMBERED = 100_000;

/** The accounts (by tenant key) a belief holds for in this process. */
export class AccountBeliefs {
  private readonly held = new Set<string>();

  /** `why`: what changed, when a statement relying on the belief fails its check. */
  constructor(private readonly why: string) {}

  holds(key: string): boolean {
    return this.held.has(key);
  }

  hold(key: string): void {
    if (this.held.size >= MAX_REMEMBERED) this.held.clear();
    this.held.add(key);
  }

  drop(key: string): void {
    this.held.delete(key);
  }

  /** What a failure of a statement that relied on the belief for `key` means: its check failed, the write runs again. */
  meaning(key: string): (err: unknown) => unknown {
    return (err) => {
      if (!beliefFailed(err)) return err;
      this.drop(key);
      return new WriteMustRunAgain(this.why);
    };
  }
}
