// The embedded database is opened by one process at a time (DECISIONS A). A lock file in the
// data folder names its holder; a second process refuses at once, a stale lock (dead PID) is
// taken over.
import fs from 'node:fs';
import path from 'node:path';

export interface DataDirLock {
  release(): void;
}

export class DataDirInUseError extends Error {}

interface LockContent {
  pid: number;
  holder: string;
  since: string;
}

export async function acquireDataDirLock(dataDir: string, holder: string): Promise<DataDirLock> {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'balcao.lock');
  const content: LockContent = { pid: process.pid, holder, since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(content), { flag: 'wx' });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
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
      if (current && current.pid !== process.pid && isAlive(current.pid)) {
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
