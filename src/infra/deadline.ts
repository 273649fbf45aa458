// The one deadline helper of the drivers' waits (a pool's connection, a lone query, a replica's poll, a
// Redis command). The deadline is judged after the event loop has read what arrived: a plain timer fires
// in the timers phase, before the poll phase reads an answer that already came, so after a pause of this
// process (GC, a busy CPU) it would fail answers that were on time. Deciding in setImmediate (the check
// phase, after poll) fails only answers that are really late.

export interface Deadline<T> {
  /** The failure when the deadline passes. */
  error: () => Error;
  /** Given an answer that came after the deadline (say, a connection to give back). */
  late?: (value: T) => void;
}

/** A deadline whose failure says who did not answer in time, with nothing to do for a late answer. */
export const noAnswerWithin = (who: string, ms: number): Deadline<unknown> => ({
  error: () => new Error(`${who} did not answer within ${ms} ms`),
});

/** `pending`, or `deadline.error()` when it has not settled `ms` after the call; no deadline when `ms` ≤ 0. */
export function within<T>(pending: Promise<T>, ms: number, deadline: Deadline<T>): Promise<T> {
  if (!(ms > 0)) return pending;
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        timedOut = true;
        reject(deadline.error());
      });
    }, ms);
    pending.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        if (timedOut) deadline.late?.(value);
        else resolve(value);
      },
      (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        if (!timedOut) reject(err);
      },
    );
  });
}
