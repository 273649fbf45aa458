// The embedded database is opened by one process at a time (DECISIONS A). A lock file in the
// data folder names its holder; a second process refuses at once, a stale lock (dead PID) is
// taken over. A holder that has begun a graceful stop says so in the file, with the deadline of
// its stop: a process started meanwhile (a restart right after a stop, `npx` returning before the
// process it started has exited) waits for it to exit instead of refusing.
import fs from 'node:fs';
import path from 'node:path';

export interface DataDirLock {
  release(): void;
}

/** How often a process waiting for a stopping holder checks whether it has exited. */
const STOPPING_POLL_MS = 25;

export class DataDirInUseError extends Error {}

interface LockContent {
  pid: number;
  holder: string;
  since: string;
  /** Set once the holder has begun a graceful stop: the latest time it will have exited by. */
  stopping_until?: string;
}

/** The lock files this process holds, for announceStop. */
const held = new Map<string, LockContent>();

/**
 * Marks every lock this process holds as stopping until `deadline` (the end of its graceful stop). The file
 * is replaced by a rename, so a reader sees either the old content or the new, never half of it.
 */
export function announceStop(deadline: Date): void {
  for (const [file, content] of held) {
    const stopping: LockContent = { ...content, stopping_until: deadline.toISOString() };
    const next = `${file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(next, JSON.stringify(stopping));
      fs.renameSync(next, file);
    } catch {
      // The holder still exits within its bound; a process started meanwhile refuses, as before.
      fs.rmSync(next, { force: true });
    }
  }
}

export async function acquireDataDirLock(dataDir: string, holder: string): Promise<DataDirLock> {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'balcao.lock');
  const content: LockContent = { pid: process.pid, holder, since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(content), { flag: 'wx' });
      held.set(file, content);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        held.delete(file);
        try {
          const current = JSON.parse(fs.readFileSync(file, 'utf8')) as LockContent;
          if (current.pid === process.pid) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return { release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const current = readLock(file);
      // A lock file without its content yet is one another process has just created (it writes the content
      // right after): held, unless it is old enough to be what a crash between the two steps left.
      if (!current && isRecent(file)) throw new DataDirInUseError(`could not lock the embedded database in ${dataDir}`);
      if (current && current.pid !== process.pid && isAlive(current.pid) && !(await stopped(current))) {
        throw new DataDirInUseError(
          `the embedded database in ${dataDir} is in use by process ${current.pid} ("${current.holder}", since ${current.since}); stop it first, or use DATABASE_URL to share a PostgreSQL database`,
        );
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirInUseError(`could not lock the embedded database in ${dataDir}`);
}

const RECENT_MS = 10_000;

/** Waits for a holder that announced its stop to exit, until its stop's deadline; true once it has. */
async function stopped(holder: LockContent): Promise<boolean> {
  const until = holder.stopping_until ? Date.parse(holder.stopping_until) : Number.NaN;
  if (Number.isNaN(until)) return false;
  while (isAlive(holder.pid) && !isZombie(holder.pid)) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, STOPPING_POLL_MS));
  }
  return true;
}

function isRecent(file: string): boolean {
  try {
    return Date.now() - fs.statSync(file).mtimeMs < RECENT_MS;
  } catch {
    return false; // gone meanwhile: try again
  }
}

function readLock(file: string): LockContent | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as LockContent;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** An exited process its parent has not reaped yet (an orphan in a container whose init does not reap): Linux only. */
function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/s.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
