// A Redis command's deadline, decided after the event loop has read what arrived. Not ioredis'
// commandTimeout: after a pause of this process (GC, a busy CPU) that timer fires in the timers phase,
// before the poll phase reads a reply that already arrived, and fails over for nothing. Deciding in
// setImmediate (the check phase, after poll) times out only replies that are really late.

/** `pending`, or a rejection when it has not settled `timeoutMs` after the call (judged after a poll phase). */
export function answerWithin<T>(pending: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(new Error(`Redis did not answer within ${timeoutMs} ms`));
      });
    }, timeoutMs);
    pending.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
