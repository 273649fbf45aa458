// The one way tests wait for something that happens on its own (a worker's delivery, a reconnection, a server
// coming up): read it again and again until it holds, bounded, failing with what was awaited and what was
// last seen. Where the code under test gives a signal (an event, a callback), tests wait on that instead.
import assert from 'node:assert/strict';

export interface PollOptions<T> {
  /** When the value read is the awaited one (default: truthy). */
  done?: (value: T) => boolean;
  /** How long to keep trying (default 30 s: generous, because the suite runs on loaded machines). */
  withinMs?: number;
  /** Pause between two reads (default 20 ms). */
  everyMs?: number;
}

/** Resolves with the first value of `read()` that `done` accepts; fails naming `what` after `withinMs`. A read
 *  that throws counts as not done yet, and its error is reported if time runs out. */
export async function until<T>(what: string, read: () => T | Promise<T>, options: PollOptions<T> = {}): Promise<T> {
  const { done = Boolean, withinMs = 30_000, everyMs = 20 } = options;
  const deadline = Date.now() + withinMs;
  for (;;) {
    let last: string;
    try {
      const value = await read();
      if (done(value)) return value;
      last = JSON.stringify(value) ?? String(value);
    } catch (err) {
      last = String(err);
    }
    if (Date.now() >= deadline) assert.fail(`timed out after ${withinMs} ms waiting until ${what} (last: ${last.slice(0, 300)})`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
