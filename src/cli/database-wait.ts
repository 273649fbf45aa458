// `balcao serve` started beside its database (containers started together, a machine booting, both restarted) may
// find it not up yet, or too busy to answer within the connect timeout. Its first contact (the migrations) is then
// tried again for a bounded time before serve gives up and exits 1 (docs/operations.md, "Database").
import { toAppError } from '../errors/database-errors.ts';

/** How long start-up keeps trying to reach a database that does not answer. */
export const STARTUP_WAIT_MS = 30_000;

/** Runs `first` until it succeeds, or fails otherwise than the database being unavailable (503), or `waitMs` ran out. */
export async function whenDatabaseAnswers<T>(
  first: () => Promise<T>,
  onWait: (reason: string) => void,
  waitMs = STARTUP_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await first();
    } catch (err) {
      const left = deadline - Date.now();
      if (toAppError(err).status !== 503 || left <= 0) throw err;
      const code = (err as { code?: unknown } | null)?.code;
      onWait(typeof code === 'string' ? code : 'unavailable');
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** attempt, 2_000, left)));
    }
  }
}

/** What start-up says while it waits: one line on stderr per attempt, which --json keeps off stdout. */
export const sayWaiting =
  (command: string) =>
  (reason: string): void => {
    process.stderr.write(`${command}: the database does not answer yet (${reason}); trying again for up to ${STARTUP_WAIT_MS / 1000} s\n`);
  };
